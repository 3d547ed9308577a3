//! The figures, as SVG files a browser opens.

use std::path::Path;

use plotters::prelude::*;

/// One line of a figure.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// The legend's label.
    pub label: String,
    /// The points, in increasing x.
    pub points: Vec<(f64, f64)>,
}

/// The axes of a figure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Axes<'a> {
    /// The title.
    pub title: &'a str,
    /// The x axis's label.
    pub x: &'a str,
    /// The y axis's label.
    pub y: &'a str,
    /// Whether the x axis is logarithmic.
    pub log_x: bool,
    /// Whether the y axis is logarithmic.
    pub log_y: bool,
    /// Where the legend goes.
    pub legend: Corner,
}

/// A corner of the plotting area, for the legend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Corner {
    /// Top left: for lines that rise to the right.
    UpperLeft,
    /// Top right: for lines that fall to the right (a distribution's tail).
    UpperRight,
}

/// Builds the chart on `$x` and `$y`, draws its mesh and its lines.
macro_rules! chart {
    ($builder:expr, $x:expr, $y:expr, $axes:expr, $lines:expr) => {{
        let mut chart = $builder.build_cartesian_2d($x, $y)?;
        chart
            .configure_mesh()
            .x_desc($axes.x)
            .y_desc($axes.y)
            .draw()?;
        draw(&mut chart, $lines, $axes.legend)?;
    }};
}

const COLORS: [RGBColor; 8] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0x7f, 0x7f, 0x7f),
];

/// Draws `lines` into an SVG file at `path`.
///
/// # Errors
///
/// When the file cannot be written.
pub fn lines(
    path: &Path,
    axes: Axes<'_>,
    lines: &[Line],
) -> Result<(), Box<dyn std::error::Error>> {
    let all = || lines.iter().flat_map(|l| l.points.iter().copied());
    let x_max = all().map(|p| p.0).fold(0.0, f64::max);
    let x_min = all().map(|p| p.0).fold(x_max, f64::min);
    let y_max = all().map(|p| p.1).fold(0.0, f64::max) * 1.05;
    let y_min_pos = all()
        .map(|p| p.1)
        .filter(|&y| y > 0.0)
        .fold(y_max, f64::min);

    let root = SVGBackend::new(path, (900, 540)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(axes.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70);
    let x_min_pos = all()
        .map(|p| p.0)
        .filter(|&x| x > 0.0)
        .fold(x_max, f64::min);
    let (y_log, x_log) = (y_min_pos * 0.8..y_max, x_min_pos..x_max);
    match (axes.log_x, axes.log_y) {
        (false, false) => chart!(builder, x_min..x_max, 0.0..y_max, axes, lines),
        (false, true) => chart!(builder, x_min..x_max, y_log.log_scale(), axes, lines),
        (true, false) => chart!(builder, x_log.log_scale(), 0.0..y_max, axes, lines),
        (true, true) => chart!(builder, x_log.log_scale(), y_log.log_scale(), axes, lines),
    }
    root.present()?;
    Ok(())
}

fn draw<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    lines: &[Line],
    legend: Corner,
) -> Result<(), Box<dyn std::error::Error>>
where
    X: plotters::coord::ranged1d::Ranged<ValueType = f64>,
    Y: plotters::coord::ranged1d::Ranged<ValueType = f64>,
{
    for (i, line) in lines.iter().enumerate() {
        let color = COLORS.get(i % COLORS.len()).copied().unwrap_or(BLACK);
        chart
            .draw_series(LineSeries::new(
                line.points.iter().copied(),
                color.stroke_width(2),
            ))?
            .label(line.label.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .position(match legend {
            Corner::UpperLeft => SeriesLabelPosition::UpperLeft,
            Corner::UpperRight => SeriesLabelPosition::UpperRight,
        })
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
