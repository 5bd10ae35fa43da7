//! Money as integers: decimal USD strings read exactly into micro-dollars, never through a
//! float. Budgets (`cost_usd: "0.50"`) and brain prices (`input: "3.00"` per million tokens)
//! both use it.

/// Micro-dollars in one dollar.
pub const MICROS_PER_USD: u64 = 1_000_000;

/// Why a money string cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MoneyError(String);

/// Reads a non-negative decimal amount of dollars (`"0.50"`, `"12"`, `"0.000125"`) into
/// micro-dollars, exactly: at most six decimal places, no sign, no exponent, no separators.
pub fn parse_usd_micros(text: &str) -> Result<u64, MoneyError> {
    let bad =
        |why: &str| MoneyError(format!("{text:?} is not an amount of dollars: {why}; write e.g. \"0.50\""));
    let text_trimmed = text.trim();
    let (whole, fraction) = text_trimmed.split_once('.').unwrap_or((text_trimmed, ""));
    if whole.is_empty() && fraction.is_empty() {
        return Err(bad("it is empty"));
    }
    if !whole.bytes().all(|b| b.is_ascii_digit()) || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad("only digits and one decimal point are allowed"));
    }
    if fraction.len() > 6 {
        return Err(bad("more than six decimal places (a micro-dollar is the smallest unit)"));
    }
    let whole: u64 = if whole.is_empty() { 0 } else { whole.parse().map_err(|_| bad("too large"))? };
    let mut micros = 0u64;
    for (i, digit) in fraction.bytes().enumerate() {
        micros += u64::from(digit - b'0') * 10u64.pow(5 - i as u32);
    }
    whole.checked_mul(MICROS_PER_USD).and_then(|w| w.checked_add(micros)).ok_or_else(|| bad("too large"))
}

/// Reads a cost a runtime reported (Claude Code's `total_cost_usd`, as its JSON number's
/// decimal text) into micro-dollars, rounded UP to the next micro-dollar past six decimal
/// places, as [`token_cost_micros`] rounds: a bill never rounds in the payer's favour.
pub fn reported_usd_micros(text: &str) -> Result<u64, MoneyError> {
    let text = text.trim();
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let (kept, rest) = fraction.split_at(fraction.len().min(6));
    if !rest.bytes().all(|b| b.is_ascii_digit()) {
        return Err(MoneyError(format!(
            "{text:?} is not an amount of dollars: only digits and one decimal point"
        )));
    }
    let micros = parse_usd_micros(&format!("{whole}.{kept}"))?;
    let round_up = u64::from(rest.bytes().any(|b| b != b'0'));
    micros.checked_add(round_up).ok_or_else(|| MoneyError(format!("{text:?} is too large")))
}

/// Micro-dollars as a dollar string with six decimals trimmed to at least two: `500000` →
/// `"0.50"`, `1` → `"0.000001"`.
pub fn format_usd_micros(micros: u64) -> String {
    let whole = micros / MICROS_PER_USD;
    let mut fraction = format!("{:06}", micros % MICROS_PER_USD);
    while fraction.len() > 2 && fraction.ends_with('0') {
        fraction.pop();
    }
    format!("{whole}.{fraction}")
}

/// The cost of `tokens` at `micros_per_million` micro-dollars per million tokens, rounded up
/// to the next micro-dollar (a bill never rounds in the payer's favour).
pub fn token_cost_micros(tokens: u64, micros_per_million: u64) -> u64 {
    let product = u128::from(tokens) * u128::from(micros_per_million);
    u64::try_from(product.div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars_read_exactly() {
        assert_eq!(parse_usd_micros("0.50"), Ok(500_000));
        assert_eq!(parse_usd_micros("12"), Ok(12_000_000));
        assert_eq!(parse_usd_micros("0.000125"), Ok(125));
        assert_eq!(parse_usd_micros(".5"), Ok(500_000));
        assert_eq!(parse_usd_micros("3."), Ok(3_000_000));
        assert_eq!(parse_usd_micros("0.1"), Ok(100_000));
        for bad in ["", ".", "-1", "1e3", "0.0000001", "1,000", "$5", "99999999999999999999"] {
            assert!(parse_usd_micros(bad).is_err(), "{bad:?}");
        }
        assert_eq!(format_usd_micros(500_000), "0.50");
        assert_eq!(format_usd_micros(1), "0.000001");
        assert_eq!(format_usd_micros(12_340_000), "12.34");
        assert_eq!(token_cost_micros(1_000_000, 3_000_000), 3_000_000);
        assert_eq!(token_cost_micros(1, 300_000), 1);
        assert_eq!(token_cost_micros(10, 300_000), 3);
    }
}
