//! An uploaded file as text the finance parsers read: UTF-8 text as it is
//! (without a byte-order mark), a PDF's text layer, and a clear refusal for
//! images, scans and other binary files. Known by content, not by name.

use std::collections::BTreeMap;
use std::fmt;

use lopdf::content::{Content, Operation};
use lopdf::{Document, Encoding, Object, ObjectId};

/// Past this, a PDF's page content is not decompressed (a zip-bomb guard).
const MAX_PDF_CONTENT: usize = 16 * 1024 * 1024;
const MAX_PDF_PAGES: usize = 200;

/// Why a file gives no text.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DocumentError {
    /// A photo or a scanned PDF (no text layer); the image kind or "scanned PDF".
    Image { name: String, kind: &'static str },
    /// A PDF that could not be read; the reason.
    BadPdf { name: String, reason: String },
    /// Binary data that is neither text, PDF nor a known image.
    Binary { name: String },
}

impl fmt::Display for DocumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Image { name, kind } => write!(
                f,
                "I can't read images yet: {name} is {kind}. Paste the receipt's text, or upload the PDF/CSV \
                 (or OFX) your bank or the store sent instead."
            ),
            Self::BadPdf { name, reason } => write!(
                f,
                "I couldn't read the PDF {name} ({reason}). Paste its text, or upload the CSV/OFX export instead."
            ),
            Self::Binary { name } => write!(
                f,
                "{name} is not text, a PDF or an image I know: upload a receipt or statement as text, CSV, OFX/QFX \
                 or a PDF with a text layer."
            ),
        }
    }
}

impl std::error::Error for DocumentError {}

/// The text of a file: UTF-8 passes through (a BOM stripped), a PDF's text
/// layer is extracted; images and PDFs without text (scans) are refused with
/// a message saying what to send instead.
pub fn to_text(name: &str, bytes: &[u8]) -> Result<String, DocumentError> {
    if let Some(kind) = image_kind(bytes) {
        return Err(DocumentError::Image { name: name.into(), kind });
    }
    if is_pdf(bytes) {
        return pdf_text(name, bytes);
    }
    if let Some(text) = utf16(bytes) {
        return Ok(text);
    }
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => Ok(text.to_string()),
        // Older bank exports are Windows-1252 (`Empf\xE4nger`): text without control bytes.
        Err(_) if bytes.iter().all(|b| *b >= 0x20 || matches!(b, b'\t' | b'\n' | b'\r')) => {
            Ok(bytes.iter().map(|&b| if b == 0x80 { '€' } else { char::from(b) }).collect())
        }
        _ => Err(DocumentError::Binary { name: name.into() }),
    }
}

/// Text saved as UTF-16 with a byte-order mark (some Windows exports).
fn utf16(bytes: &[u8]) -> Option<String> {
    let (little, rest) = match bytes {
        [0xFF, 0xFE, rest @ ..] => (true, rest),
        [0xFE, 0xFF, rest @ ..] => (false, rest),
        _ => return None,
    };
    let units: Vec<u16> = rest
        .chunks_exact(2)
        .map(|c| if little { u16::from_le_bytes([c[0], c[1]]) } else { u16::from_be_bytes([c[0], c[1]]) })
        .collect();
    String::from_utf16(&units).ok().filter(|t| !t.contains('\0'))
}

/// `%PDF-` within the first kilobyte (some writers put junk before it).
fn is_pdf(bytes: &[u8]) -> bool {
    bytes.get(..bytes.len().min(1024)).is_some_and(|head| head.windows(5).any(|w| w == b"%PDF-"))
}

/// The image format a file's magic bytes name.
fn image_kind(bytes: &[u8]) -> Option<&'static str> {
    let at = |offset: usize, magic: &[u8]| bytes.get(offset..offset + magic.len()) == Some(magic);
    if at(0, b"\x89PNG\r\n\x1a\n") {
        Some("a PNG image")
    } else if at(0, b"\xFF\xD8\xFF") {
        Some("a JPEG image")
    } else if at(0, b"GIF87a") || at(0, b"GIF89a") {
        Some("a GIF image")
    } else if at(0, b"RIFF") && at(8, b"WEBP") {
        Some("a WebP image")
    } else if at(0, b"II*\0") || at(0, b"MM\0*") {
        Some("a TIFF image")
    } else if at(4, b"ftyp")
        && ["heic", "heix", "hevc", "heim", "heis", "mif1", "msf1", "avif"].iter().any(|b| at(8, b.as_bytes()))
    {
        Some("a HEIC/HEIF image")
    } else if at(0, b"BM") && bytes.len() > 26 && bytes.get(6..10) == Some(&[0, 0, 0, 0]) {
        Some("a BMP image")
    } else {
        None
    }
}

fn pdf_text(name: &str, bytes: &[u8]) -> Result<String, DocumentError> {
    let bad = |reason: String| DocumentError::BadPdf { name: name.into(), reason };
    // A parser for untrusted input: a panic inside it is a bad PDF, not a crash.
    let extracted = std::panic::catch_unwind(|| -> Result<String, String> {
        let doc = Document::load_mem(bytes).map_err(|e| e.to_string())?;
        if doc.is_encrypted() {
            return Err("it is password-protected".into());
        }
        let pages: Vec<String> = doc
            .get_pages()
            .values()
            .take(MAX_PDF_PAGES)
            .map(|page| page_pieces(&doc, *page).map(lines).map_err(|e| e.to_string()))
            .collect::<Result<_, _>>()?;
        Ok(pages.join("\n"))
    })
    .map_err(|_| bad("its structure is broken".into()))?
    .map_err(bad)?;
    let text = extracted.replace('\u{a0}', " ");
    if text.chars().filter(|c| c.is_alphanumeric()).count() < 3 {
        return Err(DocumentError::Image {
            name: name.into(),
            kind: "a scanned PDF (pictures of pages, no text layer)",
        });
    }
    Ok(text)
}

/// Text shown on a page, where the page puts it (x, y and an estimated end).
struct Piece {
    x: f32,
    y: f32,
    end: f32,
    size: f32,
    text: String,
}

/// The text pieces of a page, positioned by the text operators (`Td`, `TD`,
/// `Tm`, `T*`); fonts by their encodings, widths estimated from the size.
fn page_pieces(doc: &Document, page: ObjectId) -> lopdf::Result<Vec<Piece>> {
    let fonts = doc.get_page_fonts(page)?;
    let encodings: BTreeMap<Vec<u8>, Encoding> = fonts
        .iter()
        .filter_map(|(name, font)| Some((name.clone(), font.get_font_encoding_with_limit(doc, MAX_PDF_CONTENT).ok()?)))
        .collect();
    let content = Content::decode(&doc.get_page_content_with_limit(page, MAX_PDF_CONTENT)?)?;
    let mut pieces = Vec::new();
    let (mut line_x, mut y, mut x, mut scale, mut size, mut leading) =
        (0.0f32, 0.0f32, 0.0f32, 1.0f32, 10.0f32, 0.0f32);
    let mut font: Option<&Encoding> = None;
    for op in &content.operations {
        let num = |i: usize| op.operands.get(i).and_then(|o| o.as_float().ok()).unwrap_or(0.0);
        match op.operator.as_str() {
            "BT" => (line_x, y, x, scale) = (0.0, 0.0, 0.0, 1.0),
            "Tf" => {
                font = op.operands.first().and_then(|o| o.as_name().ok()).and_then(|n| encodings.get(n));
                size = num(1).abs();
            }
            "TL" => leading = num(0),
            "Td" | "TD" => {
                if op.operator == "TD" {
                    leading = -num(1);
                }
                line_x += num(0) * scale;
                y += num(1) * scale;
                x = line_x;
            }
            "Tm" => {
                scale = if num(0).abs() > f32::EPSILON { num(0).abs() } else { 1.0 };
                (line_x, y) = (num(4), num(5));
                x = line_x;
            }
            "T*" => (y, x) = (y - leading * scale, line_x),
            "Tj" | "TJ" | "'" | "\"" => {
                if matches!(op.operator.as_str(), "'" | "\"") {
                    (y, x) = (y - leading * scale, line_x);
                }
                let Some(encoding) = font else { continue };
                let text = shown(encoding, op);
                let width = text.chars().count() as f32 * size * scale * 0.5;
                pieces.push(Piece { x, y, end: x + width, size: size * scale, text });
                x += width;
            }
            _ => {}
        }
    }
    Ok(pieces)
}

/// The text a show operator draws; a wide `TJ` gap is a space.
fn shown(encoding: &Encoding, op: &Operation) -> String {
    let strings: Vec<&Object> = match op.operator.as_str() {
        "TJ" => op.operands.iter().filter_map(|o| o.as_array().ok()).flatten().collect(),
        "\"" => op.operands.get(2).into_iter().collect(),
        _ => op.operands.iter().collect(),
    };
    let mut text = String::new();
    for object in strings {
        match object {
            Object::String(bytes, _) => text.push_str(&Document::decode_text(encoding, bytes).unwrap_or_default()),
            other if other.as_float().is_ok_and(|n| n < -250.0) => text.push(' '),
            _ => {}
        }
    }
    text
}

/// Pieces as lines, top of the page first: pieces at one height make a
/// line, left to right, each at the character column its position gives, so
/// a table's cells stay under their headers (two spaces at least between
/// cells far apart, as statement parsers split on them).
fn lines(mut pieces: Vec<Piece>) -> String {
    pieces.sort_by(|a, b| b.y.total_cmp(&a.y).then(a.x.total_cmp(&b.x)));
    let mut rows: Vec<Vec<Piece>> = Vec::new();
    for piece in pieces {
        match rows.last_mut() {
            Some(row) if row.first().is_some_and(|f| (f.y - piece.y).abs() <= f.size.max(1.0) * 0.4) => row.push(piece),
            _ => rows.push(vec![piece]),
        }
    }
    let mut out = String::new();
    for mut row in rows {
        row.sort_by(|a, b| a.x.total_cmp(&b.x));
        let mut line = String::new();
        let mut end: Option<f32> = None;
        for piece in row {
            let column = (piece.x / (piece.size.max(1.0) * 0.5)).round().clamp(0.0, 400.0) as usize;
            let width = line.chars().count();
            let pad = match end {
                Some(e) if piece.x - e > piece.size => column.saturating_sub(width).max(2),
                Some(e) if piece.x - e > piece.size * 0.15 && !line.ends_with(' ') => 1,
                Some(_) => 0,
                None => column,
            };
            line.extend(std::iter::repeat_n(' ', pad));
            line.push_str(&piece.text);
            end = Some(piece.end.max(end.unwrap_or(f32::MIN)));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_passes_text_through_without_its_bom() {
        assert_eq!(to_text("a.csv", b"\xEF\xBB\xBFDate,Amount\r\n").as_deref(), Ok("Date,Amount\r\n"));
        assert_eq!(to_text("r.txt", "Café 4,50 €".as_bytes()).as_deref(), Ok("Café 4,50 €"));
        assert_eq!(
            to_text("w.csv", b"Empf\xE4nger;Betrag\r\nB\xE4cker;-4,50 \x80").as_deref(),
            Ok("Empfänger;Betrag\r\nBäcker;-4,50 €")
        );
        assert_eq!(to_text("u.csv", b"\xFF\xFEA\0,\0\xE9\0").as_deref(), Ok("A,é"));
    }

    #[test]
    fn document_refuses_images_by_their_magic_bytes() {
        let images: [&[u8]; 7] = [
            b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR",
            b"\xFF\xD8\xFF\xE0\0\x10JFIF",
            b"GIF89a\x01\0\x01\0",
            b"\0\0\0\x18ftypheic\0\0\0\0",
            b"RIFF\x24\0\0\0WEBPVP8 ",
            b"II*\0\x08\0\0\0",
            b"MM\0*\0\0\0\x08",
        ];
        for bytes in images {
            let err = to_text("receipt.jpg", bytes).expect_err("an image");
            assert!(matches!(err, DocumentError::Image { .. }), "{err:?}");
            assert!(err.to_string().starts_with("I can't read images yet: receipt.jpg is a"), "{err}");
            assert!(err.to_string().contains("Paste the receipt's text, or upload the PDF/CSV"), "{err}");
        }
    }

    #[test]
    fn document_refuses_other_binary_and_broken_pdfs() {
        let err = to_text("x.bin", b"\0\x01\x02\x03PK\x03\x04").expect_err("binary");
        assert_eq!(err, DocumentError::Binary { name: "x.bin".into() });
        assert!(to_text("x.bin", &[0xC3, 0x28, 0x01]).is_err(), "invalid UTF-8 with a control byte");
        let err = to_text("s.pdf", b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\n%%EOF").expect_err("broken pdf");
        assert!(matches!(err, DocumentError::BadPdf { .. } | DocumentError::Image { .. }), "{err:?}");
    }
}
