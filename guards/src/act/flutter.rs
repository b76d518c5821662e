//! `flutter run` on a physical device (rule `flutter-run-device`): the
//! phones and tablets belong to whoever holds them, and a run installs over
//! their app. Emulators, simulators, desktop and web targets are free.

use super::Rule;
use super::rules::Hit;
use super::shell::Word;

const INSTEAD_FLUTTER: &str =
    "run on an emulator, a simulator or `-d chrome`; physical devices belong to whoever holds them";

pub(super) fn verdict(argv: &[Word], hits: &mut Vec<Hit>) {
    let Some(run) = argv.iter().position(|w| w.text == "run") else {
        return;
    };
    if argv[1..run].iter().any(|w| !w.text.starts_with('-')) {
        return; // `run` is an argument of another subcommand
    }
    let rest = &argv[run + 1..];
    let mut device: Option<&str> = None;
    for (k, w) in rest.iter().enumerate() {
        let t = w.text.as_str();
        if t == "-d" || t == "--device-id" {
            device = rest.get(k + 1).map(|w| w.text.as_str());
        } else if let Some(d) = t.strip_prefix("--device-id=") {
            device = Some(d);
        } else if let Some(d) = t
            .strip_prefix("-d")
            .filter(|d| !d.is_empty() && !t.starts_with("--"))
        {
            device = Some(d);
        }
    }
    if let Some(d) = device
        && is_physical_device(d)
    {
        hits.push(Hit::new(
            Rule::FlutterRunDevice,
            format!("`flutter run` on the physical device `{d}`"),
            INSTEAD_FLUTTER,
        ));
    }
}

/// Device ids that name no physical device: desktop and web targets,
/// Android emulators, iOS simulators (UUID 8-4-4-4-12).
fn is_physical_device(d: &str) -> bool {
    let virtual_target = matches!(
        d.to_ascii_lowercase().as_str(),
        "chrome" | "web-server" | "edge" | "macos" | "linux" | "windows" | "flutter-tester"
    ) || d.starts_with("emulator-")
        || is_uuid(d);
    !virtual_target && !d.is_empty() && !d.starts_with('$')
}

fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 5
        && parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12])
        && parts
            .iter()
            .all(|p| p.chars().all(|c| c.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices() {
        assert!(is_physical_device("00008030-001A2C3E1234802E"));
        assert!(is_physical_device("R58M12ABCDE"));
        assert!(!is_physical_device("emulator-5554"));
        assert!(!is_physical_device("chrome"));
        assert!(!is_physical_device("6F1B2D3C-1111-2222-3333-444455556666"));
    }
}
