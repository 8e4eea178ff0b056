//! SVG to PNG (resvg) and to PDF (svg2pdf), both with the embedded DejaVu Sans as
//! the only font, so a figure looks the same on every machine.

use std::sync::{Arc, OnceLock};

use resvg::tiny_skia;
use resvg::usvg::{self, fontdb};

/// The output format of figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Raster, for slides and posts.
    Png,
    /// Vector, for the web.
    Svg,
    /// Vector, for papers.
    Pdf,
}

impl Format {
    /// Parses `png`, `svg` or `pdf`.
    pub fn parse(s: &str) -> Result<Format, String> {
        match s.to_ascii_lowercase().as_str() {
            "png" => Ok(Format::Png),
            "svg" => Ok(Format::Svg),
            "pdf" => Ok(Format::Pdf),
            other => Err(format!("--format {other}: give png, svg or pdf")),
        }
    }

    /// The file extension.
    pub fn ext(self) -> &'static str {
        match self {
            Format::Png => "png",
            Format::Svg => "svg",
            Format::Pdf => "pdf",
        }
    }
}

fn options() -> usvg::Options<'static> {
    static DB: OnceLock<Arc<fontdb::Database>> = OnceLock::new();
    let db = DB.get_or_init(|| {
        let mut db = fontdb::Database::new();
        db.load_font_data(dejavu::sans::regular().to_vec());
        db.load_font_data(dejavu::sans::bold().to_vec());
        db.set_sans_serif_family("DejaVu Sans");
        Arc::new(db)
    });
    usvg::Options {
        font_family: "DejaVu Sans".to_string(),
        fontdb: Arc::clone(db),
        ..usvg::Options::default()
    }
}

fn tree(svg: &str) -> Result<usvg::Tree, String> {
    usvg::Tree::from_str(svg, &options()).map_err(|e| format!("the drawn SVG does not parse: {e}"))
}

/// An opaque pixmap as an RGB PNG at zlib level 1: a third of the size of
/// tiny-skia's own (RGBA, fastest) encoding in about the same time; higher levels
/// save little more and cost much more (measured on bench/plots.sh's input).
fn rgb_png(pixmap: &tiny_skia::Pixmap) -> Result<Vec<u8>, png::EncodingError> {
    let rgb: Vec<u8> = pixmap.data().chunks_exact(4).flat_map(|p| [p[0], p[1], p[2]]).collect();
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, pixmap.width(), pixmap.height());
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_deflate_compression(png::DeflateCompression::Level(1));
    enc.write_header()?.write_image_data(&rgb)?;
    Ok(out)
}

/// The figure in `format`.
pub fn encode(svg: &str, format: Format) -> Result<Vec<u8>, String> {
    match format {
        Format::Svg => Ok(svg.as_bytes().to_vec()),
        Format::Png => {
            let tree = tree(svg)?;
            let size = tree.size().to_int_size();
            let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
                .ok_or_else(|| format!("cannot make a {}x{} image", size.width(), size.height()))?;
            pixmap.fill(tiny_skia::Color::WHITE);
            resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
            rgb_png(&pixmap).map_err(|e| format!("cannot encode the PNG: {e}"))
        }
        Format::Pdf => {
            let tree = tree(svg)?;
            svg2pdf::to_pdf(
                &tree,
                svg2pdf::ConversionOptions::default(),
                svg2pdf::PageOptions::default(),
            )
            .map_err(|e| format!("cannot convert to PDF: {e}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SVG: &str = r##"<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20"><rect width="40" height="20" fill="#d62728"/><text x="2" y="15" font-family="sans-serif" font-size="12">Hi</text></svg>"##;

    #[test]
    fn each_format_has_its_magic() {
        let png = encode(SVG, Format::Png).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let pdf = encode(SVG, Format::Pdf).unwrap();
        assert_eq!(&pdf[..5], b"%PDF-");
        assert_eq!(encode(SVG, Format::Svg).unwrap(), SVG.as_bytes());
        assert!(Format::parse("jpg").is_err());
        assert_eq!(Format::parse("PDF").unwrap().ext(), "pdf");
    }
}
