//! ISO-8601 timestamps as the reference tools write them (`YYYY-MM-DDTHH:mm:ss.sssZ`, UTC,
//! milliseconds) and their conversion to epoch milliseconds. Pure code, no I/O, no clock.

/// Formats epoch milliseconds as JavaScript's `Date.prototype.toISOString()` does for years
/// 0..=9999 (the only years a wall clock produces).
pub fn format_iso_ms(epoch_ms: i64) -> String {
    match iso_ms_text(epoch_ms) {
        Some(text) => String::from_utf8(text.to_vec()).expect("the digits are ASCII"),
        None => {
            // Out of a wall clock's range: as `{:04}` would print it (JavaScript would throw).
            let (year, month, day) = civil_from_days(epoch_ms.div_euclid(86_400_000));
            let ms_of_day = epoch_ms.rem_euclid(86_400_000);
            format!(
                "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
                ms_of_day / 3_600_000,
                (ms_of_day / 60_000) % 60,
                (ms_of_day / 1000) % 60,
                ms_of_day % 1000
            )
        }
    }
}

/// `toISOString()`'s text of epoch milliseconds in years 0..=9999, `None` outside them.
pub fn iso_ms_text(epoch_ms: i64) -> Option<[u8; 24]> {
    let days = epoch_ms.div_euclid(86_400_000);
    let ms_of_day = epoch_ms.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    if !(0..=9999).contains(&year) {
        return None;
    }
    // Digits written in place: an append formats one timestamp, and `format!` would cost a
    // measurable part of a small append (docs/decisions/append-path.md).
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
    Some(text)
}

/// The largest distance from the epoch a JavaScript `Date` holds (100,000,000 days); further
/// instants are NaN.
const DATE_MS_MAX: i64 = 8_640_000_000_000_000;

/// Parses a timestamp as JavaScript's `new Date(text).getTime()` reads the ISO forms
/// (format-spec/log.md, "Timestamps"): `YYYY`, `YYYY-MM`, `YYYY-MM-DD` or six-digit years
/// `±YYYYYY[-MM[-DD]]`, optionally followed by `THH:mm[:ss[.fraction]]` and `Z` or an offset
/// `±HH:mm` / `±HHmm`. As V8 does, `t` and `z` may be lower case, a single space may stand for
/// the `T` after a full date, a day up to 31 rolls over into the next month, and `24:00` ends
/// the day. Returns `None` where JavaScript gives `NaN` and for the spellings only V8's
/// fallback parser reads (`Jan 1 2025`, `2025/01/01`, ...).
pub fn parse_iso_ms(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    let mut at = 0;
    // `digits` fixed-width decimal digits at `at`.
    let number = |at: &mut usize, digits: usize| -> Option<i64> {
        let field = bytes.get(*at..*at + digits)?;
        if !field.iter().all(u8::is_ascii_digit) {
            return None;
        }
        *at += digits;
        Some(
            field
                .iter()
                .fold(0i64, |acc, d| acc * 10 + i64::from(d - b'0')),
        )
    };
    let year = match bytes.first()? {
        sign @ (b'+' | b'-') => {
            at = 1;
            let magnitude = number(&mut at, 6)?;
            match sign {
                // ECMAScript forbids "-000000" (a second spelling of year 0).
                b'-' if magnitude == 0 => return None,
                b'-' => -magnitude,
                _ => magnitude,
            }
        }
        _ => number(&mut at, 4)?,
    };
    let (mut month, mut day) = (1, 1);
    let mut full_date = false;
    if bytes.get(at) == Some(&b'-') {
        at += 1;
        month = number(&mut at, 2)?;
        if bytes.get(at) == Some(&b'-') {
            at += 1;
            day = number(&mut at, 2)?;
            full_date = true;
        }
    }
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let mut ms_of_day = 0i64;
    let mut offset_minutes = 0i64;
    if at < bytes.len() {
        match bytes[at] {
            b'T' | b't' => {}
            b' ' if full_date => {}
            _ => return None,
        }
        at += 1;
        let hour = number(&mut at, 2)?;
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        at += 1;
        let minute = number(&mut at, 2)?;
        let (mut second, mut millis) = (0, 0);
        if bytes.get(at) == Some(&b':') {
            at += 1;
            second = number(&mut at, 2)?;
            if bytes.get(at) == Some(&b'.') {
                at += 1;
                let start = at;
                while bytes.get(at).is_some_and(u8::is_ascii_digit) {
                    at += 1;
                }
                if at == start {
                    return None;
                }
                // JavaScript keeps milliseconds and cuts further digits.
                let kept = (at - start).min(3);
                let mut from = start;
                millis = number(&mut from, kept)? * 10i64.pow(3 - kept as u32);
            }
        }
        if hour > 24
            || minute > 59
            || second > 59
            || (hour == 24 && (minute, second, millis) != (0, 0, 0))
        {
            return None;
        }
        ms_of_day = ((hour * 60 + minute) * 60 + second) * 1000 + millis;
        match bytes.get(at) {
            Some(b'Z' | b'z') if at + 1 == bytes.len() => {}
            Some(sign @ (b'+' | b'-')) => {
                let sign = *sign;
                at += 1;
                let hours = number(&mut at, 2)?;
                if bytes.get(at) == Some(&b':') {
                    at += 1;
                }
                let minutes = number(&mut at, 2)?;
                if at != bytes.len() || hours > 23 || minutes > 59 {
                    return None;
                }
                let minutes = hours * 60 + minutes;
                offset_minutes = if sign == b'+' { minutes } else { -minutes };
            }
            // Without a zone designator JavaScript reads a date-time as local time;
            // transcripts never contain that form, and UTC keeps the answer deterministic.
            None => {}
            _ => return None,
        }
    }
    let ms = days_from_civil(year, month, day) * 86_400_000 + ms_of_day - offset_minutes * 60_000;
    (-DATE_MS_MAX..=DATE_MS_MAX).contains(&ms).then_some(ms)
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
            "2025-01-32",
            "2025-00-10",
            "2025-01-00",
            "2025-01-01T00:00:00.Z",
            "2025-01-01T25:00Z",
            "２０２５-01-01",
        ] {
            assert_eq!(parse_iso_ms(text), None, "{text}");
        }
    }

    /// Each timestamp is read as Node 24's `new Date(text).getTime()` read it (run with
    /// `TZ=UTC`; `None` is NaN). Before, treelog read the rows marked `was NaN` as NaN, and the
    /// offsets `+24:00` and `+01:60` as valid.
    #[test]
    fn same_instant_as_javascript() {
        for (text, javascript) in [
            ("2025", Some(1_735_689_600_000)),                      // was NaN
            ("2025-01", Some(1_735_689_600_000)),                   // was NaN
            ("0000", Some(-62_167_219_200_000)),                    // was NaN
            ("+002025-01-01T00:00:00Z", Some(1_735_689_600_000)),   // was NaN
            ("+002025-02-30", Some(1_740_873_600_000)),             // was NaN
            ("-000001-01-01T00:00:00Z", Some(-62_198_755_200_000)), // was NaN
            ("+275760-09-13T00:00:00.000Z", Some(8_640_000_000_000_000)), // was NaN
            ("-271821-04-20", Some(-8_640_000_000_000_000)),        // was NaN
            ("2025-02-29", Some(1_740_787_200_000)),                // was NaN
            ("2025-04-31", Some(1_746_057_600_000)),                // was NaN
            ("2025-02-30T10:00Z", Some(1_740_909_600_000)),         // was NaN
            ("2025-01-01t10:00:00z", Some(1_735_725_600_000)),      // was NaN
            ("2025-01-01T10:00:00.123z", Some(1_735_725_600_123)),  // was NaN
            ("2025-01-01T10:00:00+0100", Some(1_735_722_000_000)),  // was NaN
            ("2025-01-01T10:00:00-0130", Some(1_735_731_000_000)),  // was NaN
            ("2025-01-01 10:00:00", Some(1_735_725_600_000)),       // was NaN
            ("2025-01-01 10:00:00.1234Z", Some(1_735_725_600_123)), // was NaN
            ("2025-01-01 10:00+01:00", Some(1_735_722_000_000)),    // was NaN
            ("2025-01-01 24:00", Some(1_735_776_000_000)),          // was NaN
            ("2025T10:00Z", Some(1_735_725_600_000)),               // was NaN
            ("2025-01T10:00Z", Some(1_735_725_600_000)),            // was NaN
            ("2025-01-01", Some(1_735_689_600_000)),
            ("2025-01-01T10:00:00Z", Some(1_735_725_600_000)),
            ("2025-01-01T10:00Z", Some(1_735_725_600_000)),
            ("2025-01-01T10:00:00.5Z", Some(1_735_725_600_500)),
            ("2025-01-01T10:00:00.123456789Z", Some(1_735_725_600_123)),
            ("2025-01-01T10:00:00+01:00", Some(1_735_722_000_000)),
            ("2025-01-01T00:00:00-23:59", Some(1_735_775_940_000)),
            ("2025-01-01T10:00:00", Some(1_735_725_600_000)),
            ("2025-12-31T24:00:00Z", Some(1_767_225_600_000)),
            ("2025-01-01T10:00:00+24:00", None), // was 1735639200000
            ("2025-01-01T10:00:00+01:60", None), // was read as +02:00
            ("+275760-09-13T00:00:00.001Z", None),
            ("-271821-04-19T23:59:59.999Z", None),
            ("-000000-01-01T00:00:00Z", None),
            ("2025-01-01T24:00:00.001Z", None),
            ("2025-01-01T10:00:60Z", None),
            ("2025-01-01T10:00:00+01", None),
            ("2025-01-01T10:00:00+01:00:00", None),
            ("2025-01-01T10:00:00+01:00Z", None),
            ("2025-01-01T10:00:00 Z", None),
            ("2025-01-01T10:00:00.123ZZ", None),
            ("2025-01-01T10", None),
            ("2025-01-01T", None),
            ("2025-01-01TZ", None),
            ("2025-01-01 10", None),
            ("2025-01-01 T10:00Z", None),
            ("2025-01-01T1:00Z", None),
            ("2025-01-01T10:00:00,5Z", None),
            (" 2025-01-01T10:00:00Z", None),
            ("20250101", None),
            ("0000-00", None),
        ] {
            assert_eq!(parse_iso_ms(text), javascript, "{text}");
        }
    }

    /// Spellings only V8's fallback parser reads: a known difference (format-spec/log.md,
    /// "Timestamps"), pinned so that a change to it is deliberate.
    #[test]
    fn fallback_parser_spellings_are_nan() {
        for text in [
            "Jan 1 2025",
            "Wed, 01 Jan 2025 10:00:00 GMT",
            "2025/01/01",
            "2025-1-1",
            "2025-01-01Z",
            "+2025-01-01",
            "2025 10:00",
            "2025-01-01  10:00",
            "5",
        ] {
            assert_eq!(parse_iso_ms(text), None, "{text}");
        }
    }
}
