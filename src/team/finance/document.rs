//! An uploaded file as text the finance parsers read: UTF-8 text as it is
//! (without a byte-order mark), a PDF's text layer, and a clear refusal for
//! images, scans and other binary files. Known by content, not by name.

use std::fmt;

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
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => Ok(text.to_string()),
        _ => Err(DocumentError::Binary { name: name.into() }),
    }
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
        let doc = lopdf::Document::load_mem(bytes).map_err(|e| e.to_string())?;
        if doc.is_encrypted() {
            return Err("it is password-protected".into());
        }
        let pages: Vec<u32> = doc.get_pages().keys().copied().take(MAX_PDF_PAGES).collect();
        let mut text = String::new();
        for chunk in doc.extract_text_chunks_with_limit(&pages, MAX_PDF_CONTENT).into_iter().flatten() {
            text.push_str(&chunk);
        }
        Ok(text)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_passes_text_through_without_its_bom() {
        assert_eq!(to_text("a.csv", b"\xEF\xBB\xBFDate,Amount\r\n").as_deref(), Ok("Date,Amount\r\n"));
        assert_eq!(to_text("r.txt", "Café 4,50 €".as_bytes()).as_deref(), Ok("Café 4,50 €"));
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
        assert!(to_text("x.bin", &[0xC3, 0x28, 0xA0]).is_err(), "invalid UTF-8");
        let err = to_text("s.pdf", b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\n%%EOF").expect_err("broken pdf");
        assert!(matches!(err, DocumentError::BadPdf { .. } | DocumentError::Image { .. }), "{err:?}");
    }
}
