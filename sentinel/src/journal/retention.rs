//! Which day files go: a pure plan over the folder's listing. Days older
//! than the kept window go first; then, while the total is over the byte
//! bound, the oldest remaining days — never today's, which is being
//! written (a today alone over the bound is the writer's to stop: it drops
//! further lines and counts them).

/// One day file as listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DayFile {
    /// Days since 1970-01-01 (UTC).
    pub day: i64,
    pub bytes: u64,
}

/// How much the journal keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keep {
    /// Today and the days before it, this many in all.
    pub days: u32,
    /// The whole folder at most this many bytes.
    pub max_bytes: u64,
}

impl Default for Keep {
    fn default() -> Self {
        Keep {
            days: crate::constants::JOURNAL_KEEP_DAYS,
            max_bytes: crate::constants::JOURNAL_MAX_BYTES,
        }
    }
}

/// The days to delete, oldest first, so that `need` more bytes fit.
pub fn plan(files: &[DayFile], today: i64, keep: Keep, need: u64) -> Vec<i64> {
    let mut files: Vec<DayFile> = files.to_vec();
    files.sort_by_key(|f| f.day);
    let first_kept = today - i64::from(keep.days.max(1)) + 1;
    let mut gone = vec![];
    let mut total: u64 = files.iter().map(|f| f.bytes).sum();
    for f in &files {
        let too_old = f.day < first_kept;
        let over = total + need > keep.max_bytes && f.day < today;
        if too_old || over {
            gone.push(f.day);
            total -= f.bytes;
        }
    }
    gone
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(day: i64, bytes: u64) -> DayFile {
        DayFile { day, bytes }
    }

    #[test]
    fn retention_table() {
        let keep = |days, max_bytes| Keep { days, max_bytes };
        // (files, today, keep, want deleted, why); nothing more to fit
        type Case = (Vec<DayFile>, i64, Keep, Vec<i64>, &'static str);
        let cases: Vec<Case> = vec![
            (vec![], 100, keep(30, 1000), vec![], "empty folder"),
            (
                vec![f(71, 1), f(70, 1), f(100, 1)],
                100,
                keep(30, 1000),
                vec![70],
                "30 days kept: today and the 29 before (71..=100)",
            ),
            (
                vec![f(98, 400), f(99, 400), f(100, 400)],
                100,
                keep(30, 1000),
                vec![98],
                "over the bytes: the oldest day goes first, then it fits",
            ),
            (
                vec![f(98, 400), f(99, 400), f(100, 400)],
                100,
                keep(30, 1200),
                vec![],
                "exactly at the bound: nothing goes",
            ),
            (
                vec![f(99, 10), f(100, 5000)],
                100,
                keep(30, 1000),
                vec![99],
                "today alone over the bound: every older day goes, today stays",
            ),
            (
                vec![f(50, 1), f(99, 600), f(100, 600)],
                100,
                keep(30, 1000),
                vec![50, 99],
                "too old and over the bytes together, oldest first",
            ),
            (
                vec![f(101, 1), f(100, 1)],
                100,
                keep(1, 1000),
                vec![],
                "a day after today (a clock moved back) is not old",
            ),
            (
                vec![f(99, 1), f(100, 1)],
                100,
                keep(0, 1000),
                vec![99],
                "zero days reads as one: today is always kept",
            ),
        ];
        for (files, today, k, want, why) in cases {
            assert_eq!(plan(&files, today, k, 0), want, "{why}");
        }
        // A line to fit: days go until it does.
        let files = [f(98, 400), f(99, 400), f(100, 100)];
        let k = keep(30, 1000);
        assert_eq!(plan(&files, 100, k, 100), Vec::<i64>::new(), "it fits");
        assert_eq!(plan(&files, 100, k, 101), vec![98], "one byte over");
        assert_eq!(plan(&files, 100, k, 600), vec![98, 99], "all but today");
    }
}
