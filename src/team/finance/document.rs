//! An uploaded file as text the finance parsers read: UTF-8 text as it is
//! (without a byte-order mark), a PDF's text layer, and a clear refusal for
//! images, scans and other binary files. Known by content, not by name.
//!
//! Limits come before the work they limit: a file's size is checked before
//! it is read ([`read`]), and a PDF's text stops being extracted as soon as
//! it passes the input limit, its page content as soon as it passes
//! [`MAX_PDF_CONTENT`]; the extraction is linear in what it reads.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::Read as _;
use std::path::Path;

use lopdf::content::{Content, Operation};
use lopdf::{Dictionary, Document, Encoding, Object, ObjectId};

use crate::config::Limits;
use crate::protocol::DelegationError;

/// The page content (drawing instructions) decompressed and read from one
/// PDF, all pages together: past it the PDF is refused (a zip-bomb guard,
/// and a bound on the work for pages that draw no text).
pub(crate) const MAX_PDF_CONTENT: usize = 16 * 1024 * 1024;
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
    /// The file could not be opened or read; the reason.
    Unreadable { name: String, reason: String },
    /// The file, its text or a PDF's page content is over its limit, which
    /// the reason names; found before the work past the limit was done.
    TooLarge { name: String, reason: String },
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
            Self::Unreadable { name, reason } => write!(f, "cannot read {name}: {reason}"),
            Self::TooLarge { name, reason } => write!(
                f,
                "{name} is too large: {reason}. Send fewer pages or a shorter period (a month's statement), \
                 or raise [limits] max_input_bytes."
            ),
        }
    }
}

impl std::error::Error for DocumentError {}

/// Every reason a file gives no text is the caller's to fix: `INVALID_REQUEST`.
impl From<DocumentError> for DelegationError {
    fn from(e: DocumentError) -> Self {
        DelegationError::invalid(e.to_string())
    }
}

/// The text of the file at `path` under `limits`: its size is checked
/// before it is read (at most [`Limits::max_file_bytes`], read no further
/// than that should it grow meanwhile), then [`to_text`] holds the text to
/// `max_input_bytes`.
pub(crate) fn read(path: &Path, limits: &Limits) -> Result<String, DocumentError> {
    let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    let unreadable =
        |e: std::io::Error| DocumentError::Unreadable { name: path.display().to_string(), reason: e.to_string() };
    let max = limits.max_file_bytes();
    let too_large = |size: String| DocumentError::TooLarge {
        name: name.clone(),
        reason: format!("the file is {size} bytes and files up to {max} bytes are read (4 × [limits] max_input_bytes)"),
    };
    let file = std::fs::File::open(path).map_err(unreadable)?;
    let size = file.metadata().map_err(unreadable)?.len();
    if size > max as u64 {
        return Err(too_large(size.to_string()));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    // `take`: a pipe has no size, and a file may grow after it was measured
    file.take(max as u64 + 1).read_to_end(&mut bytes).map_err(unreadable)?;
    if bytes.len() > max {
        return Err(too_large(format!("over {max}")));
    }
    to_text(&name, &bytes, limits.max_input_bytes)
}

/// The text of a file, at most `max_text` bytes of it: UTF-8 passes through
/// (a BOM stripped), a PDF's text layer is extracted until it passes
/// `max_text`; images and PDFs without text (scans) are refused with a
/// message saying what to send instead.
pub(crate) fn to_text(name: &str, bytes: &[u8], max_text: usize) -> Result<String, DocumentError> {
    if let Some(kind) = image_kind(bytes) {
        return Err(DocumentError::Image { name: name.into(), kind });
    }
    let pdf = is_pdf(bytes);
    // text is at least half its bytes (UTF-16 is the widest): a file that
    // long is refused before it is converted
    if !pdf && bytes.len().saturating_sub(2) / 2 > max_text {
        return Err(text_too_large(name, max_text));
    }
    let text = if pdf { pdf_text(name, bytes, max_text) } else { plain_text(name, bytes) }?;
    if text.len() > max_text {
        return Err(text_too_large(name, max_text));
    }
    Ok(text)
}

fn text_too_large(name: &str, max_text: usize) -> DocumentError {
    DocumentError::TooLarge {
        name: name.into(),
        reason: format!("its text passes the input limit of {max_text} bytes ([limits] max_input_bytes)"),
    }
}

/// Text as UTF-8, UTF-16 with a BOM, or Windows-1252.
fn plain_text(name: &str, bytes: &[u8]) -> Result<String, DocumentError> {
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

/// Why extraction stopped early.
enum Stop {
    Bad(String),
    /// The text passed the input limit.
    Text,
    /// The page content passed [`MAX_PDF_CONTENT`].
    Content,
}

impl From<lopdf::Error> for Stop {
    fn from(e: lopdf::Error) -> Self {
        match e {
            lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded { .. }) => Stop::Content,
            e => Stop::Bad(e.to_string()),
        }
    }
}

/// What is left to spend on one PDF: text bytes (pieces shown, then lines
/// written) and page content bytes.
struct Budget {
    text: usize,
    content: usize,
}

impl Budget {
    fn spend_text(&mut self, n: usize) -> Result<(), Stop> {
        self.text = self.text.checked_sub(n).ok_or(Stop::Text)?;
        Ok(())
    }
}

fn pdf_text(name: &str, bytes: &[u8], max_text: usize) -> Result<String, DocumentError> {
    let bad = |reason: String| DocumentError::BadPdf { name: name.into(), reason };
    // A parser for untrusted input: a panic inside it is a bad PDF, not a crash.
    let extracted = std::panic::catch_unwind(|| -> Result<String, Stop> {
        let doc = Document::load_mem(bytes)?;
        if doc.is_encrypted() {
            return Err(Stop::Bad("it is password-protected".into()));
        }
        // The text is charged twice: pieces as a page shows them (they are
        // held until the page is done), lines as they are written.
        let mut budget = Budget { text: max_text, content: MAX_PDF_CONTENT };
        let mut out = String::new();
        let mut fonts = Fonts::default();
        for (i, page) in doc.get_pages().values().take(MAX_PDF_PAGES).enumerate() {
            let pieces = page_pieces(&doc, *page, &mut fonts, &mut budget)?;
            if i > 0 {
                out.push('\n');
            }
            lines(pieces, &mut out, max_text)?;
        }
        Ok(out)
    })
    .map_err(|_| bad("its structure is broken".into()))?;
    let text = match extracted {
        Ok(text) => text.replace('\u{a0}', " "),
        Err(Stop::Bad(reason)) => return Err(bad(reason)),
        Err(Stop::Text) => return Err(text_too_large(name, max_text)),
        Err(Stop::Content) => {
            return Err(DocumentError::TooLarge {
                name: name.into(),
                reason: format!("its pages hold more than {} MiB of drawing instructions", MAX_PDF_CONTENT >> 20),
            });
        }
    };
    if text.chars().filter(|c| c.is_alphanumeric()).count() < 3 {
        return Err(DocumentError::Image {
            name: name.into(),
            kind: "a scanned PDF (pictures of pages, no text layer)",
        });
    }
    Ok(text)
}

/// Font encodings by font dictionary, made once per PDF however many pages
/// use a font.
#[derive(Default)]
struct Fonts<'a>(HashMap<*const Dictionary, Option<Encoding<'a>>>);

impl<'a> Fonts<'a> {
    /// The encodings of a page's fonts by resource name.
    fn of_page(&mut self, doc: &'a Document, page: ObjectId) -> Result<BTreeMap<Vec<u8>, &Encoding<'a>>, Stop> {
        let fonts = doc.get_page_fonts(page)?;
        for font in fonts.values() {
            let key: *const Dictionary = *font;
            self.0.entry(key).or_insert_with(|| font.get_font_encoding_with_limit(doc, MAX_PDF_CONTENT).ok());
        }
        Ok(fonts
            .into_iter()
            .filter_map(|(name, font)| Some((name, self.0.get(&(font as *const Dictionary))?.as_ref()?)))
            .collect())
    }
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
/// The content is read one operation at a time and reading stops as soon as
/// the page content or the text shown passes what `budget` has left.
fn page_pieces<'a>(
    doc: &'a Document,
    page: ObjectId,
    fonts: &mut Fonts<'a>,
    budget: &mut Budget,
) -> Result<Vec<Piece>, Stop> {
    let encodings = fonts.of_page(doc, page)?;
    let content = doc.get_page_content_with_limit(page, budget.content)?;
    budget.content -= content.len().min(budget.content);
    let mut pieces = Vec::new();
    let (mut line_x, mut y, mut x, mut scale, mut size, mut leading) =
        (0.0f32, 0.0f32, 0.0f32, 1.0f32, 10.0f32, 0.0f32);
    let mut font: Option<&Encoding> = None;
    for op in Content::decode_iter(&content) {
        let op = op?;
        let num = |i: usize| op.operands.get(i).and_then(|o| o.as_float().ok()).unwrap_or(0.0);
        match op.operator.as_str() {
            "BT" => (line_x, y, x, scale) = (0.0, 0.0, 0.0, 1.0),
            "Tf" => {
                font = op.operands.first().and_then(|o| o.as_name().ok()).and_then(|n| encodings.get(n).copied());
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
                let text = shown(encoding, &op);
                // an empty piece still costs a place in the page's pieces
                budget.spend_text(text.len().max(1))?;
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

/// Pieces as lines appended to `out`, top of the page first: pieces at one
/// height make a line, left to right, each at the character column its
/// position gives, so a table's cells stay under their headers (two spaces
/// at least between cells far apart, as statement parsers split on them).
/// Stops once `out` passes `max_text`.
fn lines(mut pieces: Vec<Piece>, out: &mut String, max_text: usize) -> Result<(), Stop> {
    pieces.sort_by(|a, b| b.y.total_cmp(&a.y).then(a.x.total_cmp(&b.x)));
    let mut rows: Vec<Vec<Piece>> = Vec::new();
    for piece in pieces {
        match rows.last_mut() {
            Some(row) if row.first().is_some_and(|f| (f.y - piece.y).abs() <= f.size.max(1.0) * 0.4) => row.push(piece),
            _ => rows.push(vec![piece]),
        }
    }
    for mut row in rows {
        row.sort_by(|a, b| a.x.total_cmp(&b.x));
        let mut line = String::new();
        // characters in `line`, counted as they are added: counting the
        // whole line again for each piece made a long line quadratic
        let mut width = 0;
        let mut end: Option<f32> = None;
        for piece in row {
            let column = (piece.x / (piece.size.max(1.0) * 0.5)).round().clamp(0.0, 400.0) as usize;
            let pad = match end {
                Some(e) if piece.x - e > piece.size => column.saturating_sub(width).max(2),
                Some(e) if piece.x - e > piece.size * 0.15 && !line.ends_with(' ') => 1,
                Some(_) => 0,
                None => column,
            };
            line.extend(std::iter::repeat_n(' ', pad));
            line.push_str(&piece.text);
            width += pad + piece.text.chars().count();
            end = Some(piece.end.max(end.unwrap_or(f32::MIN)));
        }
        out.push_str(line.trim_end());
        out.push('\n');
        if out.len() > max_text {
            return Err(Stop::Text);
        }
    }
    Ok(())
}

/// Sample PDFs for the tests and the bench: one page, one font, the
/// page's content as given.
#[cfg(any(test, feature = "test-util"))]
pub(crate) mod samples {
    use lopdf::content::{Content, Operation};
    use lopdf::{Document, Object};

    /// A one-page PDF (compressed, as writers make them) whose content
    /// stream is `ops`, with one font `F1`.
    pub(crate) fn pdf_of(ops: Vec<Operation>) -> Vec<u8> {
        use lopdf::{Stream, dictionary};
        let mut doc = Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let font_id = doc.add_object(dictionary! {"Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Courier"});
        let resources_id = doc.add_object(dictionary! {"Font" => dictionary! {"F1" => font_id}});
        let content = Content { operations: ops }.encode().expect("content");
        let content_id = doc.add_object(Stream::new(dictionary! {}, content));
        let page_id = doc.add_object(dictionary! {"Type" => "Page", "Parent" => pages_id, "Contents" => content_id});
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! {
                "Type" => "Pages", "Kids" => vec![page_id.into()], "Count" => 1, "Resources" => resources_id,
                "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
            }),
        );
        let catalog_id = doc.add_object(dictionary! {"Type" => "Catalog", "Pages" => pages_id});
        doc.trailer.set("Root", catalog_id);
        doc.compress();
        let mut out = Vec::new();
        doc.save_to(&mut out).expect("pdf");
        out
    }

    /// `n` strings of `len` characters shown one after another: on one line
    /// (`across`) or each on a line of its own.
    pub(crate) fn shown_strings(n: usize, len: usize, across: bool) -> Vec<Operation> {
        let mut ops = vec![
            Operation::new("BT", vec![]),
            Operation::new("Tf", vec!["F1".into(), 10.into()]),
            Operation::new("TL", vec![12.into()]),
            Operation::new("Td", vec![40.into(), 700.into()]),
        ];
        let op = if across { "Tj" } else { "'" };
        let text = |i: usize| Object::string_literal(format!("{:0len$} ", i % 10));
        ops.extend((0..n).map(|i| Operation::new(op, vec![text(i)])));
        ops.push(Operation::new("ET", vec![]));
        ops
    }
}

#[cfg(test)]
mod tests {
    use super::samples::{pdf_of, shown_strings};
    use super::*;

    const LIMIT: usize = 256 * 1024;

    /// A long line and many lines come out whole and in order. Counting a
    /// long line again for each string shown once made extraction quadratic
    /// (12,000 strings on one line: 88 ms; 96,000: 1.28 s); what extraction
    /// costs as a page grows is measured by `cargo bench --bench overhead --
    /// documents`, not timed here.
    #[test]
    fn pdf_text_of_a_long_line_and_of_many_lines_is_whole() {
        let n = 20_000;
        let across = to_text("one-line.pdf", &pdf_of(shown_strings(n, 4, true)), usize::MAX).expect("text");
        let expected: Vec<String> = (0..n).map(|i| format!("{:04}", i % 10)).collect();
        assert_eq!(across.lines().count(), 1, "one line");
        assert!(across.split_whitespace().eq(expected.iter().map(String::as_str)), "every string, in order");
        let down = to_text("lines.pdf", &pdf_of(shown_strings(n, 4, false)), usize::MAX).expect("text");
        let lines: Vec<&str> = down.lines().collect();
        assert_eq!(lines.len(), n, "a line for each string");
        assert!(lines.iter().enumerate().all(|(i, l)| l.trim() == format!("{:04}", i % 10)), "{:?}", &lines[..3]);
    }

    #[test]
    fn pdf_extraction_stops_once_its_text_passes_the_limit() {
        let pdf = pdf_of(shown_strings(200_000, 4, true));
        assert!(pdf.len() < 16 * 1024, "a small file: {} bytes", pdf.len());
        let err = to_text("big.pdf", &pdf, 4096).expect_err("over the limit");
        assert!(matches!(err, DocumentError::TooLarge { .. }), "{err:?}");
        assert!(err.to_string().contains("input limit of 4096 bytes ([limits] max_input_bytes)"), "{err}");
        // the stop comes while the page's pieces are read, before 200,000 of
        // them are held and laid out (the bench shows what that saves)
        let doc = Document::load_mem(&pdf).expect("pdf");
        let page = *doc.get_pages().values().next().expect("a page");
        let mut budget = Budget { text: 4096, content: MAX_PDF_CONTENT };
        let read = page_pieces(&doc, page, &mut Fonts::default(), &mut budget);
        assert!(matches!(read, Err(Stop::Text)), "stopped reading the page");
        let one_page = to_text("ok.pdf", &pdf_of(shown_strings(200, 4, false)), 4096);
        assert!(one_page.is_ok_and(|t| t.len() <= 4096), "a text under the limit is read");
        let code = crate::protocol::DelegationError::from(err).code;
        assert_eq!(code, crate::protocol::ErrorCode::InvalidRequest);
    }

    #[test]
    fn pages_sharing_one_content_stream_are_charged_for_each_page() {
        use lopdf::{Stream, dictionary};
        // 200 pages that each point at one stream of 600 KB (one string
        // shown in no font: no text): 120 MB of content from a few kilobytes
        let mut doc = Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let content = format!("BT ({}) Tj ET\n", "a".repeat(600_000)).into_bytes();
        let content_id = doc.add_object(Stream::new(dictionary! {}, content));
        let kids: Vec<Object> = (0..200)
            .map(|_| {
                doc.add_object(dictionary! {"Type" => "Page", "Parent" => pages_id, "Contents" => content_id}).into()
            })
            .collect();
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! {"Type" => "Pages", "Kids" => kids, "Count" => 200,
            "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()]}),
        );
        let catalog_id = doc.add_object(dictionary! {"Type" => "Catalog", "Pages" => pages_id});
        doc.trailer.set("Root", catalog_id);
        doc.compress();
        let mut pdf = Vec::new();
        doc.save_to(&mut pdf).expect("pdf");
        assert!(pdf.len() < 64 * 1024, "{} bytes", pdf.len());
        let err = to_text("pages.pdf", &pdf, 256 * 1024).expect_err("too much content");
        assert!(err.to_string().contains("more than 16 MiB of drawing instructions"), "{err}");
    }

    #[test]
    fn a_file_over_its_limit_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().expect("dir");
        let limits = Limits { max_input_bytes: 1000, ..Limits::default() };
        let path = dir.path().join("big.csv");
        std::fs::write(&path, "a".repeat(4001)).expect("write");
        let err = read(&path, &limits).expect_err("over 4 × 1000");
        assert!(
            err.to_string().starts_with("big.csv is too large: the file is 4001 bytes and files up to 4000"),
            "{err}"
        );
        std::fs::write(&path, "a".repeat(1001)).expect("write");
        let err = read(&path, &limits).expect_err("text over 1000");
        assert!(err.to_string().contains("its text passes the input limit of 1000 bytes"), "{err}");
        std::fs::write(&path, "Date,Amount\n").expect("write");
        assert_eq!(read(&path, &limits).as_deref(), Ok("Date,Amount\n"));
        let gone = read(&dir.path().join("none.csv"), &limits).expect_err("missing");
        assert!(matches!(gone, DocumentError::Unreadable { .. }), "{gone:?}");
    }

    #[test]
    fn document_passes_text_through_without_its_bom() {
        assert_eq!(to_text("a.csv", b"\xEF\xBB\xBFDate,Amount\r\n", LIMIT).as_deref(), Ok("Date,Amount\r\n"));
        assert_eq!(to_text("r.txt", "Café 4,50 €".as_bytes(), LIMIT).as_deref(), Ok("Café 4,50 €"));
        assert_eq!(
            to_text("w.csv", b"Empf\xE4nger;Betrag\r\nB\xE4cker;-4,50 \x80", LIMIT).as_deref(),
            Ok("Empfänger;Betrag\r\nBäcker;-4,50 €")
        );
        assert_eq!(to_text("u.csv", b"\xFF\xFEA\0,\0\xE9\0", LIMIT).as_deref(), Ok("A,é"));
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
            let err = to_text("receipt.jpg", bytes, LIMIT).expect_err("an image");
            assert!(matches!(err, DocumentError::Image { .. }), "{err:?}");
            assert!(err.to_string().starts_with("I can't read images yet: receipt.jpg is a"), "{err}");
            assert!(err.to_string().contains("Paste the receipt's text, or upload the PDF/CSV"), "{err}");
        }
    }

    #[test]
    fn document_refuses_other_binary_and_broken_pdfs() {
        let err = to_text("x.bin", b"\0\x01\x02\x03PK\x03\x04", LIMIT).expect_err("binary");
        assert_eq!(err, DocumentError::Binary { name: "x.bin".into() });
        assert!(to_text("x.bin", &[0xC3, 0x28, 0x01], LIMIT).is_err(), "invalid UTF-8 with a control byte");
        let err = to_text("s.pdf", b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\n%%EOF", LIMIT).expect_err("broken pdf");
        assert!(matches!(err, DocumentError::BadPdf { .. } | DocumentError::Image { .. }), "{err:?}");
    }
}
