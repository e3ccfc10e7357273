//! The side-by-side tables: each implementation's median, its range, and ratios against
//! client-go and kube-runtime, under the machine's load average.

use std::collections::HashMap;

/// One implementation's results over several runs (each a fresh process).
#[derive(Clone, Debug, Default)]
pub struct Runs(pub Vec<HashMap<String, f64>>);

impl Runs {
    /// The median of `key` over the runs that report it.
    pub fn median(&self, key: &str) -> Option<f64> {
        let mut values = self.values(key);
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        Some(values[values.len() / 2])
    }

    /// The smallest and largest `key`.
    pub fn range(&self, key: &str) -> Option<(f64, f64)> {
        let values = self.values(key);
        let min = values.iter().copied().reduce(f64::min)?;
        let max = values.iter().copied().reduce(f64::max)?;
        Some((min, max))
    }

    fn values(&self, key: &str) -> Vec<f64> {
        self.0.iter().filter_map(|r| r.get(key).copied()).collect()
    }
}

/// How a figure reads.
#[derive(Clone, Copy)]
pub enum Unit {
    /// Per second (higher is better).
    Rate,
    /// Bytes (lower is better).
    Bytes,
    /// Seconds (lower is better).
    Seconds,
}

impl Unit {
    fn show(self, value: f64) -> String {
        match self {
            Unit::Rate if value >= 1e6 => format!("{:.2} M/s", value / 1e6),
            Unit::Rate => format!("{:.1} k/s", value / 1e3),
            Unit::Bytes if value >= 1e9 => format!("{:.2} GB", value / 1e9),
            Unit::Bytes if value >= 1e6 => format!("{:.0} MB", value / 1e6),
            Unit::Bytes => format!("{value:.0} B"),
            Unit::Seconds => format!("{value:.2} s"),
        }
    }

    fn better(self) -> &'static str {
        match self {
            Unit::Rate => "higher is better",
            Unit::Bytes | Unit::Seconds => "lower is better",
        }
    }
}

/// One row of a table: a label and a median (with its range) if measured.
pub struct Row {
    pub label: String,
    pub value: Option<f64>,
    pub range: Option<(f64, f64)>,
}

impl Row {
    pub fn of(label: impl Into<String>, runs: &Runs, key: &str) -> Self {
        Self {
            label: label.into(),
            value: runs.median(key),
            range: runs.range(key),
        }
    }
}

/// Prints a table: every row's median, range, and its ratio to the `client_go` and `kube`
/// reference values (this project's rows first).
pub fn table(title: &str, unit: Unit, rows: &[Row], client_go: Option<f64>, kube: Option<f64>) {
    println!(
        "\n{title} ({}; load average {})",
        unit.better(),
        crate::support::load_average()
    );
    println!(
        "  {:<52} {:>12} {:>24} {:>12} {:>14}",
        "", "median", "range", "/ client-go", "/ kube-runtime"
    );
    for row in rows {
        let Some(value) = row.value else {
            println!("  {:<52} {:>12}", row.label, "not measured");
            continue;
        };
        let range = row
            .range
            .map(|(lo, hi)| format!("{} - {}", unit.show(lo), unit.show(hi)))
            .unwrap_or_default();
        let ratio = |reference: Option<f64>| {
            reference
                .filter(|r| *r > 0.0)
                .map(|r| format!("{:.2}x", value / r))
                .unwrap_or_else(|| "-".to_owned())
        };
        println!(
            "  {:<52} {:>12} {:>24} {:>12} {:>14}",
            row.label,
            unit.show(value),
            range,
            ratio(client_go),
            ratio(kube)
        );
    }
}
