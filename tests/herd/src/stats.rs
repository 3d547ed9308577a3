//! Summaries of samples.

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
        Summary {
            mean: values.iter().sum::<f64>() / values.len() as f64,
            p5: nearest_rank(values, 0.05),
            p95: nearest_rank(values, 0.95),
        }
    }
}

/// The nearest-rank `q`-quantile (0 < q ≤ 1) of `sorted`, sorted in increasing order: the
/// smallest value that at least `q` of the sample does not exceed. An empty sample gives 0.
#[must_use]
pub fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len().max(1)) - 1;
    sorted.get(i).copied().unwrap_or_default()
}
