//! The HTML page of a bench report: one file, no outside resource (no script, style sheet or
//! font to fetch), the plots drawn here as inline SVG, so it opens anywhere and can be mailed.
//!
//! Every plot is an `<svg class="plot">` whose data marks (bars, lines) carry the class `mark`
//! and their value in a `<title>` (shown on hover). A short script at the end counts, once the
//! page is laid out, the plots whose marks have a size, and writes the result to the body's
//! `data-plots-drawn` attribute: a headless browser's DOM then says the plots were drawn.

use std::fmt::Write;

use super::{Report, SystemResult, WorkloadResult};
use crate::size::human_bytes;

/// Width of every plot in pixels.
const WIDTH: f64 = 900.0;

/// Left margin of the bar charts, for the labels.
const LABEL_WIDTH: f64 = 230.0;

/// Right margin of the bar charts, for the axis's last label.
const RIGHT_MARGIN: f64 = 60.0;

/// Height of one bar.
const BAR: f64 = 18.0;

/// The colours of the phases, by name, in the legend's order; of any other phase; of an
/// iterative job's iterations (alternating); and of the systems.
const PHASE_COLOURS: [(&str, &str); 4] = [
    ("map", "#4e79a7"),
    ("reduce", "#f28e2b"),
    ("reduce-2", "#b07aa1"),
    ("commit", "#59a14f"),
];
const UNNAMED_PHASE_COLOUR: &str = "#76b7b2";
const ITERATION_COLOURS: [&str; 2] = ["#4e79a7", "#f28e2b"];
const OTHER_COLOUR: &str = "#bab0ac";
const SYSTEM_COLOURS: [&str; 2] = ["#4e79a7", "#e15759"];

/// Escapes text for HTML and SVG.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn phase_colour(name: &str) -> &'static str {
    PHASE_COLOURS
        .iter()
        .find(|(phase, _)| *phase == name)
        .map_or(UNNAMED_PHASE_COLOUR, |(_, colour)| colour)
}

/// A legend: a swatch and a name for each entry.
fn legend(entries: &[(&str, &str)]) -> String {
    let mut html = String::from(r#"<p class="legend">"#);
    for (name, colour) in entries {
        let _ = write!(
            html,
            r#"<span><span class="swatch" style="background:{colour}"></span>{}</span>"#,
            escape(name)
        );
    }
    html.push_str("</p>");
    html
}

fn system_colour(index: usize) -> &'static str {
    SYSTEM_COLOURS[index % SYSTEM_COLOURS.len()]
}

/// A number for an axis: few digits.
fn tick_label(value: f64) -> String {
    if value == 0.0 {
        "0".into()
    } else if value.abs() >= 100.0 {
        format!("{value:.0}")
    } else if value.abs() >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// A round upper bound of an axis holding `max`: 1, 2 or 5 times a power of ten.
fn nice_max(max: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let power = 10f64.powf(max.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|&bound| bound >= max)
        .unwrap_or(10.0 * power)
}

/// A vertical grid with five steps to `max`, labelled with `unit`, over a plot area from
/// `left` to `right`, of height `height` (below `top`).
fn x_grid(svg: &mut String, left: f64, right: f64, top: f64, height: f64, max: f64, unit: &str) {
    for step in 0..=5 {
        let value = max * f64::from(step) / 5.0;
        let x = left + (right - left) * f64::from(step) / 5.0;
        let _ = write!(
            svg,
            r##"<line x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{:.1}" stroke="#ddd"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" class="tick">{}{}</text>"##,
            top + height,
            top + height + 14.0,
            tick_label(value),
            if step == 5 { unit } else { "" }
        );
    }
}

/// A part of a bar: its value, colour and title (shown on hover).
type Segment = (f64, &'static str, String);

/// One labelled row of horizontal bars, each bar a list of segments.
struct Row {
    label: String,
    segments: Vec<Segment>,
}

/// A horizontal bar chart: one row per label, segments stacked left to right. `marker` draws
/// a dashed vertical line at a value (a budget, say) with its label.
fn bar_chart(id: &str, rows: &[Row], unit: &str, marker: Option<(f64, &str)>) -> String {
    let top = 10.0;
    let height = rows.len() as f64 * (BAR + 6.0);
    let total = |row: &Row| row.segments.iter().map(|s| s.0).sum::<f64>();
    let mut max = rows.iter().map(total).fold(0.0, f64::max);
    if let Some((value, _)) = marker {
        max = max.max(value);
    }
    let max = nice_max(max);
    let (left, right) = (LABEL_WIDTH, WIDTH - RIGHT_MARGIN);
    let scale = (right - left) / max;
    let mut svg = format!(
        r#"<svg class="plot" id="{id}" width="{WIDTH}" height="{:.0}" viewBox="0 0 {WIDTH} {:.0}" role="img">"#,
        top + height + 24.0,
        top + height + 24.0
    );
    x_grid(&mut svg, left, right, top, height, max, unit);
    for (i, row) in rows.iter().enumerate() {
        let y = top + i as f64 * (BAR + 6.0) + 3.0;
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" class="label">{}</text>"#,
            left - 6.0,
            y + BAR - 5.0,
            escape(&row.label)
        );
        let mut x = left;
        for (value, colour, title) in &row.segments {
            let width = (value * scale).max(0.0);
            let _ = write!(
                svg,
                r#"<rect class="mark" x="{x:.2}" y="{y:.1}" width="{width:.2}" height="{BAR}" fill="{colour}"><title>{}</title></rect>"#,
                escape(title)
            );
            x += width;
        }
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" class="value">{}</text>"#,
            (x + 4.0).min(right - 40.0),
            y + BAR - 5.0,
            tick_label(total(row))
        );
    }
    if let Some((value, label)) = marker {
        let x = left + value * scale;
        let _ = write!(
            svg,
            r##"<line x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{:.1}" stroke="#333" stroke-dasharray="4 3"/><text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text>"##,
            top + height,
            x - 3.0,
            top + 9.0,
            escape(label)
        );
    }
    svg.push_str("</svg>");
    svg
}

/// A line plot of the systems' samples of one workload over time: `value` picks the quantity.
fn time_plot(
    id: &str,
    workload: &WorkloadResult,
    unit: &str,
    floor: f64,
    value: impl Fn(&super::Sample) -> f64,
) -> String {
    let (width, height, left, top) = (WIDTH / 2.0 - 10.0, 150.0, 50.0, 10.0);
    let right = width - 25.0;
    let duration = nice_max(
        workload
            .systems
            .iter()
            .map(|s| s.wall_seconds)
            .fold(0.0, f64::max),
    );
    let max = nice_max(
        workload
            .systems
            .iter()
            .flat_map(|s| s.samples.iter().map(&value))
            .fold(floor, f64::max),
    );
    let mut svg = format!(
        r#"<svg class="plot" id="{id}" width="{width:.0}" height="{:.0}" viewBox="0 0 {width:.0} {:.0}" role="img">"#,
        top + height + 30.0,
        top + height + 30.0
    );
    for step in 0..=4 {
        let v = max * f64::from(step) / 4.0;
        let y = top + height - height * f64::from(step) / 4.0;
        let _ = write!(
            svg,
            r##"<line x1="{left}" y1="{y:.1}" x2="{right}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end" class="tick">{}</text>"##,
            left - 4.0,
            y + 4.0,
            tick_label(v)
        );
    }
    for step in 0..=4 {
        let t = duration * f64::from(step) / 4.0;
        let x = left + (right - left) * f64::from(step) / 4.0;
        let _ = write!(
            svg,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle" class="tick">{}{}</text>"#,
            top + height + 14.0,
            tick_label(t),
            if step == 4 { " s" } else { "" }
        );
    }
    let _ = write!(
        svg,
        r#"<text x="{left}" y="{:.1}" class="tick">{}</text>"#,
        top + height + 28.0,
        escape(unit)
    );
    for (i, system) in workload.systems.iter().enumerate() {
        if system.samples.is_empty() {
            continue;
        }
        let points: Vec<String> = system
            .samples
            .iter()
            .map(|s| {
                let x = left + (right - left) * (s.seconds / duration).min(1.0);
                let y = top + height - height * (value(s) / max).min(1.0);
                format!("{x:.1},{y:.1}")
            })
            .collect();
        let peak = system.samples.iter().map(&value).fold(0.0, f64::max);
        if let [only] = points.as_slice() {
            // A run shorter than two samples: a dot, not a line without length.
            let (x, y) = only.split_once(',').unwrap_or(("0", "0"));
            let _ = write!(
                svg,
                r#"<circle class="mark" cx="{x}" cy="{y}" r="2.5" fill="{}"><title>{}: {}</title></circle>"#,
                system_colour(i),
                system.system.name(),
                tick_label(peak)
            );
            continue;
        }
        let _ = write!(
            svg,
            r#"<polyline class="mark" fill="none" stroke="{}" stroke-width="1.5" points="{}"><title>{}: peak {}</title></polyline>"#,
            system_colour(i),
            points.join(" "),
            system.system.name(),
            tick_label(peak)
        );
    }
    svg.push_str("</svg>");
    svg
}

/// The label of a system's row.
fn row_label(workload: &WorkloadResult, system: &SystemResult) -> String {
    format!("{} · {}", workload.workload.name(), system.system.name())
}

/// The phases of a run as bar segments, with the time outside them as "other".
fn phase_segments(system: &SystemResult) -> Vec<Segment> {
    let mut segments: Vec<Segment> = Vec::new();
    let iterations = system
        .phases
        .iter()
        .filter(|p| p.name.starts_with("iteration"))
        .count();
    for (i, phase) in system.phases.iter().enumerate() {
        // Iterations alternate two colours, so that each is seen.
        let colour = if iterations > 0 && phase.name.starts_with("iteration") {
            ITERATION_COLOURS[i % 2]
        } else {
            phase_colour(&phase.name)
        };
        segments.push((
            phase.seconds,
            colour,
            format!("{}: {:.3} s", phase.name, phase.seconds),
        ));
    }
    let inside: f64 = system.phases.iter().map(|p| p.seconds).sum();
    let other = (system.wall_seconds - inside).max(0.0);
    let what = if system.phases.is_empty() {
        "whole run"
    } else if iterations > 0 {
        "outside the iterations (the jobs reading the input and writing the output, start, exit)"
    } else {
        "outside the phases (start, planning, exit)"
    };
    segments.push((other, OTHER_COLOUR, format!("{what}: {other:.3} s")));
    segments
}

/// The page.
pub(crate) fn render(report: &Report) -> String {
    let mut page = String::new();
    let s = &report.settings;
    let _ = write!(
        page,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>sluice bench {}</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; max-width: 960px; }}
h1 {{ font-size: 22px; }} h2 {{ font-size: 17px; margin-top: 28px; }}
table {{ border-collapse: collapse; margin: 8px 0; }}
td, th {{ padding: 3px 8px; border-bottom: 1px solid #ddd; text-align: right; }}
td:first-child, th:first-child, td.text {{ text-align: left; }}
.bad {{ color: #b00; font-weight: bold; }} .good {{ color: #080; }}
svg .tick {{ font-size: 11px; fill: #555; }} svg .label {{ font-size: 12px; }}
svg .value {{ font-size: 11px; fill: #333; }}
.pair {{ display: flex; gap: 10px; }} .legend span {{ margin-right: 14px; }}
.swatch {{ display: inline-block; width: 10px; height: 10px; margin-right: 4px; }}
code {{ font-size: 12px; word-break: break-all; }}
</style></head><body>
<h1>sluice bench</h1>
<p>{} · sluice {} · {} · {} cores · {} memory · Linux {}</p>
<p>Every workload read about {} of input, with a memory budget of {}, {} thread(s), {} reducer(s);
the fastest of {} run(s) of each system is shown.</p>
"#,
        escape(&report.started),
        escape(&report.started),
        escape(report.version),
        escape(&report.machine.cpu),
        report.machine.cores,
        human_bytes(report.machine.memory_bytes),
        escape(&report.machine.kernel),
        human_bytes(s.size_bytes),
        human_bytes(s.memory_bytes),
        s.threads,
        s.reducers,
        s.runs,
    );

    page.push_str(
        "<h2>Results</h2><table><tr><th>workload</th><th>system</th><th>wall</th>\
         <th>throughput</th><th>CPU</th><th>cores used</th><th>peak memory</th><th>output</th></tr>",
    );
    for workload in &report.workloads {
        for system in &workload.systems {
            let _ = write!(
                page,
                r#"<tr><td>{}</td><td class="text">{}</td><td>{:.2} s</td><td>{:.1} MB/s</td><td>{:.2} s</td><td>{:.2}</td><td>{}</td><td class="text {}">{}</td></tr>"#,
                escape(workload.workload.name()),
                system.system.name(),
                system.wall_seconds,
                system.throughput_mb_per_s,
                system.cpu_seconds,
                system.cpu_seconds / system.wall_seconds.max(1e-9),
                human_bytes(system.peak_rss_bytes),
                if system.ok { "good" } else { "bad" },
                escape(&system.check)
            );
        }
    }
    page.push_str("</table>");

    let rows_of = |segments: &dyn Fn(&SystemResult) -> Vec<Segment>| {
        report
            .workloads
            .iter()
            .flat_map(|w| {
                w.systems.iter().map(move |s| Row {
                    label: row_label(w, s),
                    segments: segments(s),
                })
            })
            .collect::<Vec<Row>>()
    };

    page.push_str(
        "<h2>Where the time went</h2><p>Wall time of each run, split into the job's phases \
         (map, reduce, commit; an iterative job's iterations). Grey is the time outside them: \
         start and exit, for an iterative job also the jobs reading its input and writing its \
         output, and all of a run that reports no phases. Hover a segment for its time.</p>",
    );
    let mut entries: Vec<(&str, &str)> = PHASE_COLOURS.to_vec();
    entries.push(("other phases", UNNAMED_PHASE_COLOUR));
    entries.push(("iterations (alternating)", ITERATION_COLOURS[1]));
    entries.push(("outside the phases", OTHER_COLOUR));
    page.push_str(&legend(&entries));
    page.push_str(&bar_chart("time", &rows_of(&phase_segments), " s", None));

    page.push_str(
        "<h2>Throughput</h2><p>Input bytes over wall time (MB = 10<sup>6</sup> bytes).</p>",
    );
    let throughput = |s: &SystemResult| {
        let colour = system_colour(s.system as usize);
        vec![(
            s.throughput_mb_per_s,
            colour,
            format!("{:.1} MB/s", s.throughput_mb_per_s),
        )]
    };
    page.push_str(&bar_chart(
        "throughput",
        &rows_of(&throughput),
        " MB/s",
        None,
    ));

    page.push_str(
        "<h2>Peak memory</h2><p>The largest resident size of the run's processes together \
         (sampled every 50 ms; for sluice also the job's own high-water mark), against the \
         memory budget (dashed).</p>",
    );
    let memory = |s: &SystemResult| {
        let mib = s.peak_rss_bytes as f64 / f64::from(1 << 20);
        vec![(
            mib,
            system_colour(s.system as usize),
            human_bytes(s.peak_rss_bytes),
        )]
    };
    let budget = s.memory_bytes as f64 / f64::from(1 << 20);
    page.push_str(&bar_chart(
        "memory",
        &rows_of(&memory),
        " MiB",
        Some((budget, "budget")),
    ));

    page.push_str(
        "<h2>CPU and memory over time</h2><p>Cores busy (CPU seconds per wall second of the \
         run's processes) and resident memory, sampled every 50 ms.</p>",
    );
    let mut systems_seen: Vec<super::System> = Vec::new();
    for system in report.workloads.iter().flat_map(|w| &w.systems) {
        if !systems_seen.contains(&system.system) {
            systems_seen.push(system.system);
        }
    }
    let entries: Vec<(&str, &str)> = systems_seen
        .iter()
        .map(|s| (s.name(), system_colour(*s as usize)))
        .collect();
    page.push_str(&legend(&entries));
    for (n, workload) in report.workloads.iter().enumerate() {
        let _ = write!(
            page,
            "<h3>{}</h3><p>{}</p><div class=\"pair\">{}{}</div>",
            escape(workload.workload.name()),
            escape(&workload.description),
            time_plot(&format!("cpu-{n}"), workload, "cores busy", 1.0, |s| s
                .cores),
            time_plot(&format!("rss-{n}"), workload, "resident MiB", 1.0, |s| {
                s.rss_bytes as f64 / f64::from(1 << 20)
            }),
        );
    }

    page.push_str("<h2>Inputs and commands</h2><table><tr><th>workload</th><th>input</th><th>bytes</th><th>files</th></tr>");
    for workload in &report.workloads {
        let _ = write!(
            page,
            r#"<tr><td>{}</td><td class="text"><code>{}</code></td><td>{}</td><td>{}</td></tr>"#,
            escape(workload.workload.name()),
            escape(&workload.input.display().to_string()),
            workload.input_bytes,
            workload.input_files
        );
    }
    page.push_str("</table><ul>");
    for workload in &report.workloads {
        for system in &workload.systems {
            let _ = write!(
                page,
                "<li>{} · {}: <code>{}</code></li>",
                escape(workload.workload.name()),
                system.system.name(),
                escape(&shell_words(&system.command))
            );
        }
    }
    page.push_str("</ul>");
    page.push_str(
        r#"<script>
addEventListener("load", () => {
  const plots = [...document.querySelectorAll("svg.plot")];
  const drawn = plots.filter(p => [...p.querySelectorAll(".mark")].some(m => {
    const box = m.getBBox();
    return box.width > 0 || box.height > 0;
  }));
  document.body.dataset.plots = plots.length;
  document.body.dataset.plotsDrawn = drawn.length;
});
</script>
</body></html>
"#,
    );
    page
}

/// A command's words as a shell would need them: quoted where they hold anything unusual.
fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty()
                && w.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_end_on_round_numbers() {
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(nice_max(0.7), 1.0);
        assert_eq!(nice_max(1.3), 2.0);
        assert_eq!(nice_max(3.0), 5.0);
        assert_eq!(nice_max(730.0), 1000.0);
        assert_eq!(nice_max(f64::NAN), 1.0);
    }

    #[test]
    fn text_is_escaped_and_commands_quoted() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        let words = ["sluice", "run", "--pattern", "[aeiou]{2,}", "it's"].map(String::from);
        assert_eq!(
            shell_words(&words),
            r#"sluice run --pattern '[aeiou]{2,}' 'it'\''s'"#
        );
    }

    #[test]
    fn a_bar_chart_has_a_mark_per_segment_scaled_to_its_axis() {
        let rows = [
            Row {
                label: "a <b>".into(),
                segments: vec![(3.0, "#000", "map".into()), (1.0, "#111", "reduce".into())],
            },
            Row {
                label: "c".into(),
                segments: vec![(2.0, "#000", "all".into())],
            },
        ];
        let svg = bar_chart("t", &rows, " s", Some((4.5, "budget")));
        assert_eq!(svg.matches(r#"class="mark""#).count(), 3);
        assert!(svg.contains("a &lt;b&gt;"));
        // The axis ends at 5: 4 seconds of the first row take 4/5 of the plot's width.
        let plot = WIDTH - RIGHT_MARGIN - LABEL_WIDTH;
        assert!(
            svg.contains(&format!(r#"width="{:.2}""#, plot * 3.0 / 5.0)),
            "{svg}"
        );
        assert!(
            svg.contains(&format!(r#"width="{:.2}""#, plot * 1.0 / 5.0)),
            "{svg}"
        );
        assert!(svg.contains("budget"));
    }
}
