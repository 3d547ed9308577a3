//! Summaries of many runs.

/// The mean and the 5th and 95th percentiles of a sample.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Summary {
    /// The mean.
    pub mean: f64,
    /// The 5th percentile (nearest rank).
    pub p5: f64,
    /// The 95th percentile (nearest rank).
    pub p95: f64,
}

impl Summary {
    /// Summarises `values` (sorted in place). An empty sample gives zeros.
    #[must_use]
    pub fn of(values: &mut [f64]) -> Self {
        if values.is_empty() {
            return Summary::default();
        }
        values.sort_by(f64::total_cmp);
        let rank = |q: f64| {
            let i = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len()) - 1;
            values.get(i).copied().unwrap_or_default()
        };
        Summary {
            mean: values.iter().sum::<f64>() / values.len() as f64,
            p5: rank(0.05),
            p95: rank(0.95),
        }
    }
}
