//! The progress numbers as a person reads them off the bar or a plain line (`3/20 … 45
//! tokens, ETA 8s`), shared by the plain-line tests (`tests/it/progress.rs`) and the terminal
//! test (`tests/ext/terminal.rs`).

/// A duration as the progress display writes it (`8s`, `1m05s`, `2h03m`, `3d04h`).
pub fn seconds(text: &str) -> Option<f64> {
    let mut total = 0.0;
    let mut digits = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let n: f64 = digits.parse().ok()?;
        digits.clear();
        total += n * match c {
            'd' => 86_400.0,
            'h' => 3600.0,
            'm' => 60.0,
            's' => 1.0,
            _ => return None,
        };
    }
    digits.is_empty().then_some(total)
}

/// A token count as the display writes it (`98765`, `123k`, `12.3M`).
pub fn tokens(text: &str) -> Option<f64> {
    let (num, scale) = match text.chars().last()? {
        'k' => (&text[..text.len() - 1], 1e3),
        'M' => (&text[..text.len() - 1], 1e6),
        'G' => (&text[..text.len() - 1], 1e9),
        _ => (text, 1.0),
    };
    Some(num.parse::<f64>().ok()? * scale)
}

/// What one look at the progress showed.
#[derive(Debug)]
pub struct Seen {
    /// When it was seen (read by the terminal test).
    #[allow(dead_code)]
    pub at: f64,
    pub done: u64,
    pub total: u64,
    /// `None` for "—".
    pub eta: Option<f64>,
    pub tokens: f64,
    /// How long the longest-running job has run (`2 running (1m05s)`), when shown.
    #[allow(dead_code)]
    pub longest: Option<f64>,
}

/// The progress numbers in a line: `… 3/20 … 2 running (12s) … 45 tokens, ETA 8s` (bar or
/// plain line).
pub fn parse(line: &str, at: f64) -> Option<Seen> {
    let words: Vec<&str> = line
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    let eta_at = words.iter().position(|w| *w == "ETA")?;
    let eta_text = words.get(eta_at + 1)?;
    let eta = if *eta_text == "—" {
        None
    } else {
        Some(seconds(eta_text)?)
    };
    let tokens_at = words.iter().position(|w| *w == "tokens")?;
    let longest = words
        .iter()
        .position(|w| *w == "running")
        .and_then(|i| words.get(i + 1))
        .and_then(|w| w.strip_prefix('(')?.strip_suffix(')'))
        .and_then(seconds);
    let (done, total) = words.iter().find_map(|w| {
        let (d, t) = w.split_once('/')?;
        Some((d.parse().ok()?, t.parse().ok()?))
    })?;
    Some(Seen {
        at,
        done,
        total,
        eta,
        tokens: tokens(words[tokens_at.checked_sub(1)?])?,
        longest,
    })
}
