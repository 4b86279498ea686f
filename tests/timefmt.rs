//! UTC timestamps without a date library.

use kernelgate::timefmt::{now_rfc3339, rfc3339};
use proptest::prelude::*;

#[test]
fn known_instants() {
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    assert_eq!(rfc3339(86_399), "1970-01-01T23:59:59Z");
    assert_eq!(rfc3339(86_400), "1970-01-02T00:00:00Z");
    assert_eq!(rfc3339(68_169_600), "1972-02-29T00:00:00Z");
    assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    assert_eq!(rfc3339(951_782_400 + 86_400), "2000-03-01T00:00:00Z");
    assert_eq!(rfc3339(1_767_225_600), "2026-01-01T00:00:00Z");
    assert_eq!(rfc3339(1_772_323_199), "2026-02-28T23:59:59Z");
    assert_eq!(rfc3339(1_772_323_200), "2026-03-01T00:00:00Z");
    assert_eq!(rfc3339(1_776_679_872), "2026-04-20T10:11:12Z");
    // 2100 is not a leap year.
    assert_eq!(rfc3339(4_102_444_800 - 86_400), "2099-12-31T00:00:00Z");
    assert_eq!(rfc3339(4_102_444_800), "2100-01-01T00:00:00Z");
    assert_eq!(rfc3339(4_107_456_000), "2100-02-28T00:00:00Z");
    assert_eq!(rfc3339(4_107_542_400), "2100-03-01T00:00:00Z");
    assert_eq!(rfc3339(253_402_300_799), "9999-12-31T23:59:59Z");
}

#[test]
fn now_is_well_formed_and_recent() {
    let s = now_rfc3339();
    assert_eq!(s.len(), 20, "{s}");
    assert!(s.as_str() > "2024-01-01T00:00:00Z", "{s}");
    let b = s.as_bytes();
    for (i, c) in [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'Z'),
    ] {
        assert_eq!(b[i], c, "{s}");
    }
}

/// Civil date by counting days forward from 1970 (slow, obviously right).
fn naive(secs: u64) -> String {
    let leap = |y: u64| (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400);
    let mut days = secs / 86_400;
    let mut y = 1970;
    loop {
        let len = if leap(y) { 366 } else { 365 };
        if days < len {
            break;
        }
        days -= len;
        y += 1;
    }
    let months = [
        31,
        if leap(y) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let mut m = 0;
    while days >= months[m] {
        days -= months[m];
        m += 1;
    }
    let r = secs % 86_400;
    format!(
        "{y:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        m + 1,
        days + 1,
        r / 3600,
        r % 3600 / 60,
        r % 60
    )
}

proptest! {
    #[test]
    fn matches_naive_calendar(secs in 0u64..13_000_000_000) {
        prop_assert_eq!(rfc3339(secs), naive(secs));
    }

    #[test]
    fn lexical_order_is_time_order(a in 0u64..253_402_300_799, b in 0u64..253_402_300_799) {
        prop_assert_eq!(rfc3339(a).cmp(&rfc3339(b)), a.cmp(&b));
    }
}
