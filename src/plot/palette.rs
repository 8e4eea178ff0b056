//! Engine colours: one colour per engine in every figure. The defaults live in
//! `assets/palette.txt`; `--palette FILE` overrides them engine by engine.

use std::collections::BTreeMap;
use std::path::Path;

/// The bundled palette.
pub const DEFAULT: &str = include_str!("../../assets/palette.txt");

/// Colours for engines not named in any palette: distinct from the defaults and
/// chosen by the engine's name, so an engine keeps its colour across runs.
const SPARE: [&str; 8] = [
    "#bcbd22", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d",
];

/// Engine name to `#rrggbb`.
#[derive(Debug, Clone)]
pub struct Palette {
    colors: BTreeMap<String, String>,
}

impl Default for Palette {
    fn default() -> Self {
        let mut p = Palette {
            colors: BTreeMap::new(),
        };
        p.merge(DEFAULT, Path::new("assets/palette.txt"))
            .expect("the bundled palette parses");
        p
    }
}

impl Palette {
    /// The bundled palette with `file`'s entries over it.
    pub fn with_file(file: Option<&Path>) -> Result<Palette, String> {
        let mut p = Palette::default();
        if let Some(f) = file {
            let text =
                std::fs::read_to_string(f).map_err(|e| format!("--palette {}: cannot read: {e}", f.display()))?;
            p.merge(&text, f)?;
        }
        Ok(p)
    }

    /// Adds the entries of palette text read from `path`.
    pub fn merge(&mut self, text: &str, path: &Path) -> Result<(), String> {
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with([';', '#']) {
                continue;
            }
            let at = || format!("{}:{}", path.display(), i + 1);
            let (name, color) = line
                .split_once('=')
                .ok_or_else(|| format!("{}: expected `engine = #rrggbb`, found '{line}'", at()))?;
            let (name, color) = (name.trim(), color.trim());
            if name.is_empty() {
                return Err(format!("{}: the engine name is missing", at()));
            }
            let color = parse_color(color).ok_or_else(|| {
                format!(
                    "{}: '{color}' is not a colour: write #rrggbb, for example #1f77b4",
                    at()
                )
            })?;
            self.colors.insert(name.to_string(), color);
        }
        Ok(())
    }

    /// The colour of `engine`.
    pub fn color(&self, engine: &str) -> String {
        if let Some(c) = self.colors.get(engine) {
            return c.clone();
        }
        // FNV-1a of the name: stable across runs and platforms.
        let h = engine.bytes().fold(0xcbf29ce484222325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
        });
        SPARE[(h % SPARE.len() as u64) as usize].to_string()
    }
}

/// `#rrggbb` (or `#rgb`) in lower case, if valid.
fn parse_color(s: &str) -> Option<String> {
    let hex = s.strip_prefix('#')?;
    if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    match hex.len() {
        6 => Some(format!("#{}", hex.to_ascii_lowercase())),
        3 => Some(format!(
            "#{}",
            hex.chars()
                .flat_map(|c| [c, c])
                .collect::<String>()
                .to_ascii_lowercase()
        )),
        _ => None,
    }
}

/// `#rrggbb` as (r, g, b).
pub fn rgb(color: &str) -> (u8, u8, u8) {
    let hex = color.trim_start_matches('#');
    let c = |i: usize| u8::from_str_radix(hex.get(i..i + 2).unwrap_or("80"), 16).unwrap_or(128);
    (c(0), c(2), c(4))
}

/// `color` mixed with white: 0 keeps it, 1 is white. Tells directories apart in
/// bar charts while the engine's hue stays.
pub fn lighten(color: &str, amount: f64) -> String {
    let (r, g, b) = rgb(color);
    let m = |c: u8| (f64::from(c) + (255.0 - f64::from(c)) * amount.clamp(0.0, 1.0)).round() as u8;
    format!("#{:02x}{:02x}{:02x}", m(r), m(g), m(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let mut p = Palette::default();
        assert_eq!(p.color("rocksdb"), "#d62728");
        let unknown = p.color("myengine");
        assert_eq!(unknown, p.color("myengine"), "stable");
        p.merge("# mine\nrocksdb = #ABC\n; x\nmyengine=#010203\n", Path::new("p.txt"))
            .unwrap();
        assert_eq!(p.color("rocksdb"), "#aabbcc");
        assert_eq!(p.color("myengine"), "#010203");
        assert_eq!(p.color("skiplist"), "#1f77b4");
    }

    #[test]
    fn bad_lines_name_the_file_and_line() {
        let mut p = Palette::default();
        let e = p.merge("\nrocksdb = red\n", Path::new("p.txt")).unwrap_err();
        assert!(e.starts_with("p.txt:2: 'red' is not a colour"), "{e}");
        let e = p.merge("rocksdb #ff0000\n", Path::new("p.txt")).unwrap_err();
        assert!(e.contains("p.txt:1: expected `engine = #rrggbb`"), "{e}");
    }

    #[test]
    fn colours_mix_with_white() {
        assert_eq!(lighten("#000000", 0.5), "#808080");
        assert_eq!(lighten("#d62728", 0.0), "#d62728");
        assert_eq!(rgb("#0a0b0c"), (10, 11, 12));
    }
}
