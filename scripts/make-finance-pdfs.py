#!/usr/bin/env python3
"""Writes the small PDF fixtures of tests/fixtures/finance (byte-doc's PDF input):
a receipt and a statement with a text layer, and a "scan" (an image, no text).
Standard library only; run from the repository root. The output is deterministic."""

import zlib
from pathlib import Path

OUT = Path("tests/fixtures/finance")


def pdf(objects):
    """A PDF from object bodies (bytes), object 1 being the catalog."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def stream(data, compress):
    if compress:
        data = zlib.compress(data, 9)
        return b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(data) + data + b"\nendstream"
    return b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"


def text_page(lines, compress):
    def escape(line):
        return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("latin-1")

    content = b"BT /F1 10 Tf 13 TL 40 800 Td\n"
    content += b"".join(b"(" + escape(line) + b") Tj T*\n" for line in lines)
    content += b"ET\n"
    return pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 842] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
        stream(content, compress),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Courier /Encoding /WinAnsiEncoding >>",
    ])


def cells_page(cells, compress):
    """Each cell placed on its own (x, y, text), written column by column as
    table generators do; numbers right-aligned at x (Courier is 6 units a
    character at size 10)."""
    content = b""
    for x, y, text, right in cells:
        if right:
            x -= 6 * len(text)
        content += b"BT /F1 10 Tf %d %d Td (%s) Tj ET\n" % (x, y, text.encode("latin-1"))
    return pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 842] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
        stream(content, compress),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Courier /Encoding /WinAnsiEncoding >>",
    ])


def scan_page():
    pixels = bytes([200, 40, 200, 40]) * 4  # a 4x4 grey image
    image = b"<< /Type /XObject /Subtype /Image /Width 4 /Height 4 /ColorSpace /DeviceGray /BitsPerComponent 8 /Length %d >>\nstream\n" % len(pixels)
    return pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 842] /Resources << /XObject << /Im1 5 0 R >> >> /Contents 4 0 R >>",
        stream(b"q 400 0 0 600 100 100 cm /Im1 Do Q\n", False),
        image + pixels + b"\nendstream",
    ])


RECEIPT = [
    "BEST BUY #1024",
    "1880 Broadway, New York, NY 10023",
    "Date: 10/25/2025   Time: 14:05",
    "USB-C Charger 65W             49.99",
    "Screen Protector              19.99",
    "Subtotal                      69.98",
    "Sales Tax                      6.12",
    "TOTAL                         76.10",
    "VISA ****4821                 76.10",
    "Thank you for shopping at Best Buy",
]

STATEMENT = [
    "FIRST COMMUNITY BANK",
    "Account Statement  October 2025",
    "Statement period: 10/01/2025 - 10/31/2025",
    "",
    "Date        Description                 Amount      Balance",
    "10/03/2025  STARBUCKS STORE 123          -4.50     1,230.06",
    "10/05/2025  KROGER #512                 -63.27     1,166.79",
    "10/10/2025  PAYROLL ACME CORP         1,500.00     2,666.79",
    "10/12/2025  AT&T WIRELESS               -85.00     2,581.79",
    "",
    "Closing balance  2,581.79",
]

# Metro Credit Union: withdrawals and deposits in separate columns, empty cells left out.
COLUMNS = [(40, False), (120, False), (390, True), (470, True), (560, True)]
TABLE = [
    ["Date", "Description", "Withdrawals", "Deposits", "Balance"],
    ["10/02/2025", "TRADER JOE'S #552", "45.67", "", "954.33"],
    ["10/09/2025", "DIRECT DEPOSIT ACME", "", "2,100.00", "3,054.33"],
    ["10/15/2025", "CITY WATER UTIL 8885551212", "62.40", "", "2,991.93"],
]


def table_cells():
    cells = [(40, 780, "METRO CREDIT UNION", False), (40, 764, "Checking statement for October 2025", False)]
    for column, (x, right) in enumerate(COLUMNS):
        for row, values in enumerate(TABLE):
            if values[column]:
                cells.append((x, 730 - 16 * row, values[column], right))
    return cells


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "receipt_best_buy.pdf").write_bytes(text_page(RECEIPT, compress=False))
    (OUT / "statement_community_bank.pdf").write_bytes(text_page(STATEMENT, compress=True))
    (OUT / "receipt_scan.pdf").write_bytes(scan_page())
    (OUT / "statement_cells.pdf").write_bytes(cells_page(table_cells(), compress=True))
