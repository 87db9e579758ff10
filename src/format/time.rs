//! ISO-8601 timestamps as the reference tools write them (`YYYY-MM-DDTHH:mm:ss.sssZ`, UTC,
//! milliseconds) and their conversion to epoch milliseconds. Pure code, no I/O, no clock.

/// Formats epoch milliseconds as JavaScript's `Date.prototype.toISOString()` does for years
/// 0..=9999 (the only years a wall clock produces).
pub fn format_iso_ms(epoch_ms: i64) -> String {
    let days = epoch_ms.div_euclid(86_400_000);
    let ms_of_day = epoch_ms.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    if !(0..=9999).contains(&year) {
        // Out of a wall clock's range: as `{:04}` would print it (JavaScript would throw).
        return format!(
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
            ms_of_day / 3_600_000,
            (ms_of_day / 60_000) % 60,
            (ms_of_day / 1000) % 60,
            ms_of_day % 1000
        );
    }
    // Digits written in place: an append formats one timestamp, and `format!` was a
    // twentieth of a small append.
    let mut text = *b"0000-00-00T00:00:00.000Z";
    let mut put = |at: usize, width: usize, mut value: i64| {
        for slot in text[at..at + width].iter_mut().rev() {
            *slot = b'0' + (value % 10) as u8;
            value /= 10;
        }
    };
    put(0, 4, year);
    put(5, 2, month);
    put(8, 2, day);
    put(11, 2, ms_of_day / 3_600_000);
    put(14, 2, (ms_of_day / 60_000) % 60);
    put(17, 2, (ms_of_day / 1000) % 60);
    put(20, 3, ms_of_day % 1000);
    String::from_utf8(text.to_vec()).expect("the template and the digits are ASCII")
}

/// Parses the ISO-8601 forms `Date.parse` accepts in practice for transcript timestamps:
/// `YYYY-MM-DDTHH:mm[:ss[.fraction]](Z|±HH:mm)` and a bare date `YYYY-MM-DD` (UTC).
/// Returns `None` where JavaScript would produce `NaN`.
pub fn parse_iso_ms(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    let number = |range: std::ops::Range<usize>| -> Option<i64> {
        let digits = bytes.get(range)?;
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        Some(
            digits
                .iter()
                .fold(0i64, |acc, d| acc * 10 + i64::from(d - b'0')),
        )
    };
    if bytes.len() < 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return None;
    }
    let year = number(0..4)?;
    let month = number(5..7)?;
    let day = number(8..10)?;
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let mut ms_of_day = 0i64;
    let mut offset_minutes = 0i64;
    if bytes.len() > 10 {
        if bytes[10] != b'T' || bytes.len() < 16 || bytes[13] != b':' {
            return None;
        }
        let hour = number(11..13)?;
        let minute = number(14..16)?;
        let mut second = 0;
        let mut millis = 0;
        let mut at = 16;
        if bytes.get(at) == Some(&b':') {
            second = number(at + 1..at + 3)?;
            at += 3;
            if bytes.get(at) == Some(&b'.') {
                let start = at + 1;
                let mut end = start;
                while end < bytes.len() && bytes[end].is_ascii_digit() {
                    end += 1;
                }
                if end == start {
                    return None;
                }
                // JavaScript keeps milliseconds and truncates further digits.
                let kept = &text[start..end.min(start + 3)];
                millis = number(start..start + kept.len())? * 10i64.pow(3 - kept.len() as u32);
                at = end;
            }
        }
        if hour > 24
            || minute > 59
            || second > 59
            || (hour == 24 && (minute, second, millis) != (0, 0, 0))
        {
            return None;
        }
        match bytes.get(at) {
            Some(b'Z') if at + 1 == bytes.len() => {}
            Some(sign @ (b'+' | b'-')) if bytes.len() == at + 6 && bytes[at + 3] == b':' => {
                let minutes = number(at + 1..at + 3)? * 60 + number(at + 4..at + 6)?;
                offset_minutes = if *sign == b'+' { minutes } else { -minutes };
            }
            // Without a zone designator JavaScript reads a date-time as local time; transcripts
            // never contain that form, and treating it as UTC keeps the answer deterministic.
            None => {}
            _ => return None,
        }
        ms_of_day = ((hour * 60 + minute) * 60 + second) * 1000 + millis;
    }
    Some(days_from_civil(year, month, day) * 86_400_000 + ms_of_day - offset_minutes * 60_000)
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Howard Hinnant's `days_from_civil`: days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The inverse of [`days_from_civil`].
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Known instants round-trip through both directions exactly as JavaScript prints them.
    #[test]
    fn iso_round_trip() {
        for (text, ms) in [
            ("1970-01-01T00:00:00.000Z", 0),
            ("2025-01-01T09:00:00.007Z", 1_735_722_000_007),
            ("2000-02-29T23:59:59.999Z", 951_868_799_999),
            ("1969-12-31T23:59:59.999Z", -1),
        ] {
            assert_eq!(parse_iso_ms(text), Some(ms), "{text}");
            assert_eq!(format_iso_ms(ms), text);
        }
    }

    proptest::proptest! {
        /// The hand-written digits print every instant of years 0..=9999 as `format!` would,
        /// and parse back to the same instant.
        #[test]
        fn digits_in_place_match_format(ms in -62_167_219_200_000i64..=253_402_300_799_999) {
            let days = ms.div_euclid(86_400_000);
            let ms_of_day = ms.rem_euclid(86_400_000);
            let (year, month, day) = civil_from_days(days);
            let expected = format!(
                "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
                ms_of_day / 3_600_000,
                (ms_of_day / 60_000) % 60,
                (ms_of_day / 1000) % 60,
                ms_of_day % 1000
            );
            proptest::prop_assert_eq!(format_iso_ms(ms), expected);
            proptest::prop_assert_eq!(parse_iso_ms(&format_iso_ms(ms)), Some(ms));
        }
    }

    /// Years past 9999 are printed in full rather than cut to four digits.
    #[test]
    fn years_past_9999_keep_their_digits() {
        assert_eq!(
            format_iso_ms(253_402_300_800_000),
            "10000-01-01T00:00:00.000Z"
        );
    }

    /// Other accepted spellings give the instant JavaScript's Date.parse gives.
    #[test]
    fn accepted_forms() {
        assert_eq!(parse_iso_ms("2025-01-01"), Some(1_735_689_600_000));
        assert_eq!(
            parse_iso_ms("2025-01-01T01:00:00+01:00"),
            Some(1_735_689_600_000)
        );
        assert_eq!(parse_iso_ms("2025-01-01T00:00Z"), Some(1_735_689_600_000));
        assert_eq!(
            parse_iso_ms("2025-01-01T00:00:00.1234Z"),
            Some(1_735_689_600_123)
        );
    }

    /// Strings that JavaScript turns into NaN give None, never a panic.
    #[test]
    fn rejected_forms() {
        for text in [
            "",
            "garbage",
            "2025-13-01T00:00:00Z",
            "2025-02-30",
            "2025-01-01T00:00:00.Z",
            "2025-01-01T25:00Z",
            "２０２５-01-01",
        ] {
            assert_eq!(parse_iso_ms(text), None, "{text}");
        }
    }
}
