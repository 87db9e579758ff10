//! pi's timestamps as JavaScript reads them, and the order V8's sort gives them.

/// Epoch milliseconds of `YYYY-MM-DDTHH:mm:ss.sssZ` (the only form the test writes), else
/// `None` (JavaScript's NaN).
pub fn iso_ms(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() != 24 || &text[4..5] != "-" || &text[7..8] != "-" || &text[10..11] != "T" {
        return None;
    }
    if &text[13..14] != ":" || &text[16..17] != ":" || &text[19..20] != "." || &text[23..] != "Z" {
        return None;
    }
    let n = |r: std::ops::Range<usize>| text[r].parse::<i64>().ok();
    let (y, mo, d) = (n(0..4)?, n(5..7)?, n(8..10)?);
    let (h, mi, s, ms) = (n(11..13)?, n(14..16)?, n(17..19)?, n(20..23)?);
    // Howard Hinnant's days_from_civil.
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((((days * 24 + h) * 60 + mi) * 60 + s) * 1000 + ms)
}

/// The order V8's `Array.prototype.sort` gives a list sorted with pi's comparator
/// (`new Date(a).getTime() - new Date(b).getTime()`, NaN read as 0), `None` standing for NaN.
/// Written here from V8's rules for lists under 64 items (one natural run, reversed when
/// strictly descending, then binary insertion: `< 0` goes left, anything else right); longer
/// lists with NaN, which the model's logs never grow, use treelog's full TimSort.
pub fn js_sort_order(keys: &[Option<i64>]) -> Vec<usize> {
    let less = |a: usize, b: usize| matches!((keys[a], keys[b]), (Some(a), Some(b)) if a < b);
    let mut order: Vec<usize> = (0..keys.len()).collect();
    if keys.iter().all(Option::is_some) {
        order.sort_by_key(|index| keys[*index]);
        return order;
    }
    if keys.len() >= 64 {
        return treelog::format::js_sort::v8_sort_order(keys.len(), |a, b| {
            treelog::format::js_sort::compare_timestamps(keys[a], keys[b])
        });
    }
    if keys.len() < 2 {
        return order;
    }
    let descending = less(1, 0);
    let mut run = 2;
    while run < keys.len() && less(run, run - 1) == descending {
        run += 1;
    }
    if descending {
        order[..run].reverse();
    }
    for start in run..keys.len() {
        let pivot = order[start];
        let (mut left, mut right) = (0, start);
        while left < right {
            let middle = (left + right) / 2;
            if less(pivot, order[middle]) {
                right = middle;
            } else {
                left = middle + 1;
            }
        }
        order[left..=start].rotate_right(1);
    }
    order
}
