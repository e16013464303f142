//! Charts as inline SVG, drawn here rather than by a script: they show with scripts off and
//! need nothing from the network. A chart's size does not grow with the run: up to
//! [`PER_JOB`] jobs get one bar each; beyond that, jobs are counted into at most [`BUCKETS`]
//! ranges of equal width. The SVG is maud markup, so labels (file names) are escaped by the
//! template engine like the rest of the page.

use super::html::{Text, tail};
use crate::i18n::Lang;
use crate::manifest::ShownStatus;
use maud::{Markup, html};

/// The most jobs drawn one bar each.
pub(super) const PER_JOB: usize = 30;
/// The most ranges a histogram has (one more when the largest value sits on a boundary).
pub(super) const BUCKETS: u64 = 20;

const WIDTH: f64 = 560.0;

/// One job's value in a chart.
pub(super) struct Sample<'a> {
    pub label: &'a str,
    pub value: u64,
    /// As a person is shown it: a doubted job is not charted as a success.
    pub status: ShownStatus,
}

/// The chart for `samples`: one bar per job for a few, a histogram for many. `fmt` writes a
/// value for people (a duration, a token count); `what` names the chart for screen readers.
pub(super) fn chart(
    samples: &[Sample],
    fmt: &dyn Fn(u64) -> String,
    what: &str,
    lang: Lang,
) -> Markup {
    if samples.len() <= PER_JOB {
        per_job(samples, fmt, what)
    } else {
        histogram(samples, fmt, what, lang)
    }
}

/// The colours of the charts, in the order a column stacks them.
pub(super) const CLASSES: [&str; 4] = ["b-succeeded", "b-doubted", "b-failed", "b-cancelled"];

/// Which colour a job's bar gets, as an index of [`CLASSES`] (only jobs that ran are charted).
fn colour(s: ShownStatus) -> usize {
    match s {
        ShownStatus::Doubted => 1,
        ShownStatus::Failed => 2,
        ShownStatus::Cancelled => 3,
        _ => 0,
    }
}

/// Horizontal bars, largest first, each labelled with the job's file.
fn per_job(samples: &[Sample], fmt: &dyn Fn(u64) -> String, what: &str) -> Markup {
    const ROW: f64 = 20.0;
    const LABEL: f64 = 210.0;
    const VALUE: f64 = 90.0;
    let mut order: Vec<&Sample> = samples.iter().collect();
    order.sort_by_key(|s| std::cmp::Reverse(s.value));
    let max = order.first().map_or(0, |s| s.value).max(1) as f64;
    let height = ROW * order.len() as f64 + 6.0;
    let span = WIDTH - LABEL - VALUE;
    let bars = html! {
        @for (i, s) in order.iter().enumerate() {
            @let y = 3.0 + ROW * i as f64;
            @let w = (s.value as f64 / max * span).max(if s.value > 0 { 1.0 } else { 0.0 });
            @let value = fmt(s.value);
            @let ty = format!("{:.1}", y + 13.0);
            g {
                title { (Text(s.label)) " — " (value) " (" (s.status.as_str()) ")" }
                text x=(LABEL - 8.0) y=(ty) text-anchor="end" { (Text(&tail(s.label, 32))) }
                rect class=(CLASSES[colour(s.status)]) x=(LABEL) y=(format!("{y:.1}")) width=(format!("{w:.1}"))
                    height=(format!("{:.1}", ROW - 5.0)) rx="2" {}
                text x=(format!("{:.1}", LABEL + w + 5.0)) y=(ty) { (value) }
            }
        }
    };
    svg(height, what, bars)
}

/// The smallest of 1, 2, 5, 10, 20, 50, … that is at least `x`.
pub(super) fn nice_step(x: u64) -> u64 {
    let mut p: u64 = 1;
    loop {
        for f in [1, 2, 5] {
            if f * p >= x {
                return f * p;
            }
        }
        p = p.saturating_mul(10);
    }
}

/// Jobs per range of values: `(step, counts)`, where `counts[i][c]` is the number of jobs of
/// colour `c` (succeeded, doubted, failed, cancelled: [`CLASSES`]) in `[i·step, (i+1)·step)`.
pub(super) fn buckets(samples: &[Sample]) -> (u64, Vec<[u64; 4]>) {
    let max = samples.iter().map(|s| s.value).max().unwrap_or(0);
    let step = nice_step(max.div_ceil(BUCKETS)).max(1);
    let mut counts = vec![[0u64; 4]; (max / step + 1) as usize];
    for s in samples {
        counts[(s.value / step) as usize][colour(s.status)] += 1;
    }
    (step, counts)
}

/// Columns of job counts per range, stacked by colour.
fn histogram(samples: &[Sample], fmt: &dyn Fn(u64) -> String, what: &str, lang: Lang) -> Markup {
    const HEIGHT: f64 = 230.0;
    const X0: f64 = 46.0;
    const X1: f64 = WIDTH - 10.0;
    const Y0: f64 = 10.0;
    const Y1: f64 = 190.0;
    let (step, counts) = buckets(samples);
    let most = counts
        .iter()
        .map(|c| c.iter().sum::<u64>())
        .max()
        .unwrap_or(0);
    let top = nice_step(most.max(1)) as f64;
    let col = (X1 - X0) / counts.len() as f64;
    // At most seven labels under the axis, on range boundaries.
    let every = counts.len().div_ceil(6).max(1);
    let inner = html! {
        @for tick in [0.0, top / 2.0, top] {
            @let y = format!("{:.1}", Y1 - tick / top * (Y1 - Y0));
            line class="grid" x1=(X0) x2=(X1) y1=(y) y2=(y) {}
            text x=(X0 - 6.0) y=(format!("{:.1}", Y1 - tick / top * (Y1 - Y0) + 4.0)) text-anchor="end" { (tick) }
        }
        @for (i, c) in counts.iter().enumerate() {
            @let n: u64 = c.iter().sum();
            @if n > 0 {
                @let x = format!("{:.1}", X0 + col * i as f64);
                @let jobs = t!(in lang; "{n} jobs, {failed} failed", n = n, failed = c[2]);
                g {
                    title { (fmt(step * i as u64)) " – " (fmt(step * (i as u64 + 1))) ": " (jobs) }
                    @for (k, y, h) in stack(c, top, Y1, Y1 - Y0) {
                        rect class=(CLASSES[k]) x=(x) y=(format!("{y:.1}")) width=(format!("{:.1}", (col - 1.0).max(0.5)))
                            height=(format!("{h:.1}")) {}
                    }
                }
            }
        }
        @for i in (0..=counts.len()).step_by(every) {
            text x=(format!("{:.1}", X0 + col * i as f64)) y=(Y1 + 16.0) text-anchor="middle" {
                (fmt(step * i as u64))
            }
        }
        line class="axis" x1=(X0) x2=(X1) y1=(Y1) y2=(Y1) {}
    };
    svg(HEIGHT, what, inner)
}

/// The parts of one column, bottom up: each colour's index, top and height.
fn stack(counts: &[u64; 4], top: f64, bottom: f64, tall: f64) -> Vec<(usize, f64, f64)> {
    let mut y = bottom;
    let mut out = Vec::new();
    for (k, &count) in counts.iter().enumerate() {
        if count == 0 {
            continue;
        }
        let h = count as f64 / top * tall;
        y -= h;
        out.push((k, y, h));
    }
    out
}

/// The `<svg>` around a chart's `inner` markup; `what` names it for screen readers.
fn svg(height: f64, what: &str, inner: Markup) -> Markup {
    html! {
        svg viewBox={ "0 0 " (WIDTH) " " (height) } width="100%" role="img" aria-label=(what)
            xmlns="http://www.w3.org/2000/svg" { (inner) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(value: u64, status: ShownStatus) -> Sample<'static> {
        Sample {
            label: "a.txt",
            value,
            status,
        }
    }

    #[test]
    fn steps_are_round() {
        assert_eq!(nice_step(0), 1);
        assert_eq!(nice_step(1), 1);
        assert_eq!(nice_step(3), 5);
        assert_eq!(nice_step(7), 10);
        assert_eq!(nice_step(11), 20);
        assert_eq!(nice_step(4_001), 5_000);
    }

    #[test]
    fn ten_thousand_jobs_make_at_most_twenty_one_ranges() {
        let samples: Vec<Sample> = (0..10_000u64)
            .map(|i| {
                let status = if i % 7 == 0 {
                    ShownStatus::Failed
                } else {
                    ShownStatus::Succeeded
                };
                sample(i * 37 % 60_001, status)
            })
            .collect();
        let (step, counts) = buckets(&samples);
        assert!(counts.len() as u64 <= BUCKETS + 1, "{}", counts.len());
        assert_eq!(step, 5_000);
        let total: u64 = counts.iter().flatten().sum();
        assert_eq!(total, 10_000);
        let failed: u64 = counts.iter().map(|c| c[2]).sum();
        assert_eq!(failed, (0..10_000).filter(|i| i % 7 == 0).count() as u64);

        let svg = chart(&samples, &|v| v.to_string(), "durations", Lang::En).into_string();
        assert!(svg.matches("<rect").count() <= 4 * 21, "bounded size");
    }

    #[test]
    fn few_jobs_get_a_bar_each_largest_first_with_escaped_labels() {
        let samples = [
            Sample {
                label: "<b>small</b>.txt",
                value: 5,
                status: ShownStatus::Succeeded,
            },
            Sample {
                label: "big.txt",
                value: 50,
                status: ShownStatus::Failed,
            },
        ];
        let svg = chart(&samples, &|v| format!("{v} s"), "durations", Lang::En).into_string();
        assert_eq!(svg.matches("<rect").count(), 2);
        let big = svg.find("big.txt").unwrap();
        let small = svg.find("&lt;b&gt;small").unwrap();
        assert!(big < small, "largest first");
        assert!(!svg.contains("<b>"));
        assert!(svg.contains(r#"class="b-failed""#));
    }

    #[test]
    fn a_doubted_job_is_charted_in_its_own_colour_not_as_a_success() {
        let samples = [
            sample(5, ShownStatus::Doubted),
            sample(7, ShownStatus::Succeeded),
        ];
        let svg = chart(&samples, &|v| v.to_string(), "t", Lang::En).into_string();
        assert!(svg.contains(r#"class="b-doubted""#), "{svg}");
        let many: Vec<Sample> = (0..40).map(|i| sample(i, ShownStatus::Doubted)).collect();
        let (_, counts) = buckets(&many);
        assert_eq!(counts.iter().map(|c| c[1]).sum::<u64>(), 40);
        assert_eq!(counts.iter().map(|c| c[0]).sum::<u64>(), 0);
    }

    #[test]
    fn all_zero_values_still_draw() {
        let samples: Vec<Sample> = (0..40).map(|_| sample(0, ShownStatus::Failed)).collect();
        let (step, counts) = buckets(&samples);
        assert_eq!((step, counts.len()), (1, 1));
        assert!(
            chart(&samples, &|v| v.to_string(), "t", Lang::Zh)
                .into_string()
                .contains("40 个任务")
        );
    }
}
