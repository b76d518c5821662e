//! Disks and partitions: every wiper, formatter and partitioner aimed at a
//! block device (`mkfs*`, `mkswap`, `wipefs -a`, `sgdisk`, `sfdisk`,
//! `fdisk`, `parted … mklabel|rm|mkpart…`, `diskutil erase*`, `blkdiscard`)
//! and any write onto a block device, whichever program makes it (`dd of=`,
//! `> /dev/sdX`, `cp … /dev/sdX`, `tee /dev/sdX`). A disk's content is gone
//! at once and for everyone on the machine: `destroy`.
//!
//! Passes: read-only and dry-run spellings (`wipefs` without `-a`, `-n`;
//! `sgdisk -p`/`--pretend`; `sfdisk -l`/`-d`/`--no-act`; `parted -l`/`print`;
//! `mke2fs -n`, `mkfs.xfs -N`; `diskutil list`), image files
//! (`mkfs.ext4 disk.img`, `parted disk.img mklabel gpt`), and the stream
//! devices (`/dev/null`, `/dev/tty`, `/dev/stderr`, …).

use super::Rule;
use super::rules::{Hit, base};
use super::shell::Word;

pub(super) const INSTEAD: &str =
    "write to a regular image file; writing to block devices is for a human at the console";

/// Device files that are streams, not storage: writing there destroys
/// nothing.
const STREAMS: &[&str] = &[
    "null", "zero", "full", "random", "urandom", "stdout", "stderr", "stdin", "tty", "console",
    "ptmx",
];
/// Directories of stream devices and of memory-backed scratch.
const STREAM_DIRS: &[&str] = &["fd/", "pts/", "shm/", "tty", "mqueue/"];

/// Is `p` a device node that stores data (a disk, a partition, a volume)?
pub(super) fn is_disk(p: &str) -> bool {
    match p.strip_prefix("/dev/") {
        Some(dev) => {
            !dev.is_empty()
                && !STREAMS.contains(&dev)
                && !STREAM_DIRS.iter().any(|d| dev.starts_with(d))
        }
        None => false,
    }
}

/// `diskutil` verbs (case-insensitive, as diskutil reads them) that erase
/// or repartition.
const DISKUTIL_ERASE: &[&str] = &[
    "erasedisk",
    "erasevolume",
    "zerodisk",
    "randomdisk",
    "secureerase",
    "partitiondisk",
    "reformat",
    "splitpartition",
    "mergepartitions",
    "deletecontainer",
    "deletevolume",
    "erasevolume",
];

/// `parted` commands that write the partition table.
const PARTED_WRITES: &[&str] = &[
    "mklabel",
    "mktable",
    "rm",
    "mkpart",
    "mkpartfs",
    "resizepart",
    "resize",
    "move",
    "rescue",
    "set",
    "toggle",
    "name",
    "disk_set",
    "disk_toggle",
    "mkfs",
];

/// `sgdisk` options that only read (or rehearse, `--pretend`).
const SGDISK_READS: &[&str] = &[
    "-p",
    "--print",
    "-v",
    "--verify",
    "-i",
    "--info",
    "-L",
    "--list-types",
    "-O",
    "--print-mbr",
    "-P",
    "--pretend",
    "-?",
    "--help",
    "-V",
    "--version",
    "-D",
    "--display-alignment",
    "-F",
    "--first-in-largest",
    "-E",
    "--end-of-largest",
    "-f",
    "--first-aligned-in-largest",
];

/// `sfdisk` / `fdisk` options that only read or rehearse.
const SFDISK_READS: &[&str] = &[
    "-l",
    "--list",
    "-d",
    "--dump",
    "-s",
    "--show-size",
    "-J",
    "--json",
    "-V",
    "--verify",
    "-g",
    "--show-geometry",
    "-F",
    "--list-free",
    "-n",
    "--no-act",
    "-h",
    "--help",
    "-v",
    "--version",
    "-x",
    "--list-details",
];

fn hit(why: String) -> Option<Hit> {
    Some(Hit::new(Rule::Destroy, why, INSTEAD))
}

fn options(argv: &[Word]) -> impl Iterator<Item = &str> {
    argv[1..]
        .iter()
        .map(|w| w.text.as_str())
        .filter(|t| t.starts_with('-') && t.len() > 1)
}

/// Does a short-option cluster or a long option among `argv` say `short` /
/// `long`?
fn has_flag(argv: &[Word], short: char, long: &str) -> bool {
    options(argv).any(|t| is_long(t, long) || (!t.starts_with("--") && t[1..].contains(short)))
}

/// Is `opt` (with or without `=VALUE`) the long option `long` or a prefix
/// of it, as GNU getopt reads it (`--al` is `--all`)? An ambiguous prefix
/// makes the tool refuse to run, so counting it is harmless.
pub(super) fn is_long(opt: &str, long: &str) -> bool {
    super::longopt::is_prefix_of(opt, long.trim_start_matches("--"))
}

fn first_disk(argv: &[Word]) -> Option<&str> {
    argv[1..]
        .iter()
        .map(|w| w.text.as_str())
        .find(|t| is_disk(t))
}

/// The verdict on one command by name (wrappers already peeled).
pub(super) fn verdict(name: &str, argv: &[Word]) -> Option<Hit> {
    if options(argv).any(|t| matches!(t, "--help" | "--version")) {
        return None;
    }
    match name {
        "dd" => {
            let dev = argv[1..]
                .iter()
                .find_map(|w| w.text.strip_prefix("of=").filter(|d| is_disk(d)))?;
            hit(format!("dd writes straight onto the device {dev}"))
        }
        "cp" | "install" | "pv" => {
            // cp's destination is its last operand (or `-t DIR`).
            let dest = argv[1..].iter().rev().find(|w| !w.text.starts_with('-'))?;
            is_disk(&dest.text).then_some(())?;
            hit(format!("{name} writes over the device {}", dest.text))
        }
        "tee" => {
            let dev = first_disk(argv)?;
            hit(format!("tee writes over the device {dev}"))
        }
        "wipefs" => {
            let wipes = has_flag(argv, 'a', "--all") || has_flag(argv, 'o', "--offset");
            let dry = has_flag(argv, 'n', "--no-act");
            let dev = first_disk(argv)?;
            (wipes && !dry).then_some(())?;
            hit(format!(
                "wipefs erases the signatures on {dev}: its data becomes unreachable"
            ))
        }
        "mke2fs" | "mkfs" | "newfs" | "mkswap" | "blkdiscard" => device_writer(name, argv),
        n if n.starts_with("mkfs.") || n.starts_with("newfs_") => device_writer(name, argv),
        "sgdisk" | "gdisk" | "cgdisk" => {
            // `--pretend` makes every change in memory only.
            if name == "sgdisk"
                && (options(argv).all(|t| SGDISK_READS.contains(&t.split('=').next().unwrap_or(t)))
                    || options(argv).any(|t| t == "-P" || t == "--pretend"))
            {
                return None;
            }
            let dev = first_disk(argv)?;
            hit(format!("{name} rewrites the partition table of {dev}"))
        }
        "sfdisk" | "fdisk" | "cfdisk" => {
            if options(argv).any(|t| SFDISK_READS.contains(&t)) {
                return None;
            }
            let dev = first_disk(argv)?;
            hit(format!("{name} rewrites the partition table of {dev}"))
        }
        "parted" => {
            let dev = first_disk(argv)?;
            let cmd = argv[1..]
                .iter()
                .map(|w| w.text.as_str())
                .find(|t| PARTED_WRITES.contains(t))?;
            hit(format!(
                "`parted {cmd}` rewrites the partition table of {dev}"
            ))
        }
        "diskutil" => {
            let verb = argv[1..]
                .iter()
                .map(|w| w.text.to_ascii_lowercase())
                .find(|t| !t.starts_with('-') && t != "apfs" && t != "ap" && t != "cs")?;
            DISKUTIL_ERASE.contains(&verb.as_str()).then_some(())?;
            hit(format!("`diskutil {verb}` erases a disk or volume"))
        }
        _ => None,
    }
}

/// A formatter (`mkfs*`, `mkswap`, `blkdiscard`) aimed at a device; the
/// dry runs of the ext and xfs formatters pass (`mke2fs -n`, `mkfs.xfs -N`;
/// `mkfs.vfat -n` is a volume label, not a dry run).
fn device_writer(name: &str, argv: &[Word]) -> Option<Hit> {
    let ext = name == "mke2fs" || name.starts_with("mkfs.ext");
    // Plain `mkfs` without `-t` makes ext2 (mke2fs reads its options).
    let typed = argv.iter().position(|w| w.text == "-t");
    let ext = ext
        || (name == "mkfs"
            && typed.is_none_or(|k| argv.get(k + 1).is_some_and(|w| w.text.starts_with("ext"))));
    // `mkfs.ntfs -n` / `mkntfs -n` is `--no-action` (not a label, as in
    // `mkfs.vfat -n`).
    let ntfs = matches!(name, "mkfs.ntfs" | "mkntfs");
    let dry = ((ext || ntfs)
        && options(argv).any(|t| !t.starts_with("--") && t[1..].contains('n')))
        || (ntfs && options(argv).any(|t| t == "--no-action"))
        || (name == "mkfs.xfs" && options(argv).any(|t| t == "-N"));
    if dry {
        return None;
    }
    let dev = first_disk(argv)?;
    let verb = match name {
        "blkdiscard" => "discards every block of",
        "mkswap" => "turns into swap",
        _ => "formats",
    };
    hit(format!("{name} {verb} the device {dev}"))
}

/// Output redirections onto a disk (`cat x.iso > /dev/sdb`), whatever the
/// command.
pub(super) fn redirect(out_files: &[Word], cmd_name: Option<&Word>) -> Option<Hit> {
    let dev = out_files.iter().find(|w| is_disk(&w.text))?;
    let who = cmd_name.map(base).unwrap_or("a redirection");
    hit(format!(
        "{who} writes straight onto the device {} (`> {}`)",
        dev.text, dev.text
    ))
}
