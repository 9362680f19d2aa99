//! The native twin of the ingest direct path (actors/ingest/direct.ts): one msgpack RowBatch payload straight into
//! Arrow column buffers, for tables whose columns all have a direct path (ints, BIGINT, DOUBLE/FLOAT, BOOLEAN,
//! timestamps, unbounded VARCHAR).
//!
//! It takes a payload whole or not at all: whenever the JavaScript direct path would roll a row back to msgpackr, or
//! give the payload to the generic path, this returns "not taken" and the payload goes to the JavaScript path as it
//! is, so rows, rejection reasons and dead letters never depend on this code. What it takes it decodes exactly as the
//! JavaScript direct path would: the same number reading as msgpackr with `int64AsType: "auto"` (which numbers are JS
//! numbers and which BigInts), then the same checks per column type. A property test holds both to the same builder
//! contents (test/unit/actors/ingest-native.test.ts).
//!
//! The columns go into a scratch buffer the caller hands in and reuses (one Node buffer per thread rather than one
//! per column per payload); the caller copies them into its column builders in bulk.

use napi::bindgen_prelude::{Int32ArraySlice, Uint8ArraySlice};
use napi::{Error, Result, Status};
use napi_derive::napi;

/// The column kinds, as actors/ingest/native-decode.ts numbers them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int32,
    Int16,
    Int8,
    Int64,
    Float64,
    Float32,
    Boolean,
    Utf8,
    /// A timestamp in the column's unit: epoch millis times this factor (1 ms, 1000 µs, 1e6 ns).
    Timestamp(i64),
}

impl Kind {
    fn from_code(code: u32) -> Option<Kind> {
        Some(match code {
            1 => Kind::Int32,
            2 => Kind::Int16,
            3 => Kind::Int8,
            4 => Kind::Int64,
            5 => Kind::Float64,
            6 => Kind::Float32,
            7 => Kind::Boolean,
            8 => Kind::Utf8,
            9 => Kind::Timestamp(1),
            10 => Kind::Timestamp(1000),
            11 => Kind::Timestamp(1_000_000),
            _ => return None,
        })
    }

    /// Bytes per value in the values region (Boolean: bits, Utf8: offsets, both handled apart).
    fn width(self) -> usize {
        match self {
            Kind::Int8 => 1,
            Kind::Int16 => 2,
            Kind::Int32 | Kind::Float32 => 4,
            Kind::Int64 | Kind::Float64 | Kind::Timestamp(_) => 8,
            Kind::Boolean | Kind::Utf8 => 0,
        }
    }
}

struct Field {
    name: Vec<u8>,
    kind: Kind,
    nullable: bool,
}

/// One column of the payload being decoded; the vectors keep their capacity from payload to payload.
#[derive(Default)]
struct Column {
    /// Fixed-width values (little-endian), Boolean value bits, or Utf8 end offsets (i32, without the leading 0).
    values: Vec<u8>,
    /// The rows that are null, in order (few, usually: the validity bits are made from them when copied out).
    null_rows: Vec<u32>,
    /// Utf8 bytes.
    bytes: Vec<u8>,
}

impl Column {
    fn clear(&mut self) {
        self.values.clear();
        self.null_rows.clear();
        self.bytes.clear();
    }
}

const TWO_53: f64 = 9007199254740992.0;

/// A msgpack number as msgpackr decodes it with `int64AsType: "auto"`: a JS number (`Num`), or a BigInt (`Big`) for
/// 64-bit integers beyond ±2^53.
#[derive(Clone, Copy)]
enum Number {
    Num(f64),
    Big(i128),
}

/// Whether `v` is what `Number.isSafeInteger` accepts. (Not `fract()`: without SSE4.1 in the baseline target it is a
/// call into libm per value.)
#[inline]
fn safe_integer(v: f64) -> bool {
    v.abs() < TWO_53 && (v as i64) as f64 == v
}

fn be<const N: usize>(d: &[u8], at: usize) -> Option<[u8; N]> {
    d.get(at..at + N)?.try_into().ok()
}

/// The number at `pos` and the position after it (None for anything else), as `DirectReader.readNumber`.
#[inline]
fn read_number(d: &[u8], pos: usize) -> Option<(Number, usize)> {
    let b = *d.get(pos)?;
    if b <= 0x7f {
        return Some((Number::Num(b as f64), pos + 1));
    }
    if b >= 0xe0 {
        return Some((Number::Num(b as f64 - 256.0), pos + 1));
    }
    let p = pos + 1;
    Some(match b {
        0xcc => (Number::Num(*d.get(p)? as f64), pos + 2),
        0xcd => (Number::Num(u16::from_be_bytes(be(d, p)?) as f64), pos + 3),
        0xce => (Number::Num(u32::from_be_bytes(be(d, p)?) as f64), pos + 5),
        0xcf => {
            let v = u64::from_be_bytes(be(d, p)?);
            (if v <= 1 << 53 { Number::Num(v as f64) } else { Number::Big(v as i128) }, pos + 9)
        }
        0xd0 => (Number::Num(i8::from_be_bytes(be(d, p)?) as f64), pos + 2),
        0xd1 => (Number::Num(i16::from_be_bytes(be(d, p)?) as f64), pos + 3),
        0xd2 => (Number::Num(i32::from_be_bytes(be(d, p)?) as f64), pos + 5),
        0xd3 => {
            let v = i64::from_be_bytes(be(d, p)?);
            (if (-(1 << 53)..=1 << 53).contains(&v) { Number::Num(v as f64) } else { Number::Big(v as i128) }, pos + 9)
        }
        0xca => (Number::Num(f32::from_be_bytes(be(d, p)?) as f64), pos + 5),
        0xcb => (Number::Num(f64::from_be_bytes(be(d, p)?)), pos + 9),
        _ => return None,
    })
}

/// The str at `pos`: its bytes' range and the position after it.
fn read_str(d: &[u8], pos: usize) -> Option<(usize, usize)> {
    let b = *d.get(pos)?;
    let (len, start) = match b {
        0xa0..=0xbf => ((b & 0x1f) as usize, pos + 1),
        0xd9 => (*d.get(pos + 1)? as usize, pos + 2),
        0xda => (u16::from_be_bytes(be(d, pos + 1)?) as usize, pos + 3),
        0xdb => (u32::from_be_bytes(be(d, pos + 1)?) as usize, pos + 5),
        _ => return None,
    };
    if start + len > d.len() {
        return None;
    }
    Some((start, start + len))
}

/// A container header (fix form `fix`…`fix + 15`, then `tag16`, `tag16 + 1`): its count and first element's position.
fn read_container(d: &[u8], pos: usize, fix: u8, tag16: u8) -> Option<(usize, usize)> {
    let b = *d.get(pos)?;
    if b >= fix && b <= fix + 0x0f {
        return Some(((b & 0x0f) as usize, pos + 1));
    }
    if b == tag16 {
        return Some((u16::from_be_bytes(be(d, pos + 1)?) as usize, pos + 3));
    }
    if b == tag16 + 1 {
        return Some((u32::from_be_bytes(be(d, pos + 1)?) as usize, pos + 5));
    }
    None
}

fn read_array(d: &[u8], pos: usize) -> Option<(usize, usize)> {
    read_container(d, pos, 0x90, 0xdc)
}

/// The position after the (whole, possibly nested) value at `pos`, as `DirectReader.skip`.
fn skip(d: &[u8], mut pos: usize) -> Option<usize> {
    let mut pending: u64 = 1;
    let len16 = |at: usize| be::<2>(d, at).map(|b| u16::from_be_bytes(b) as usize);
    let len32 = |at: usize| be::<4>(d, at).map(|b| u32::from_be_bytes(b) as usize);
    while pending > 0 {
        let b = *d.get(pos)?;
        pending -= 1;
        match b {
            0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => pos += 1,
            0x80..=0x8f => {
                pending += 2 * (b & 0x0f) as u64;
                pos += 1;
            }
            0x90..=0x9f => {
                pending += (b & 0x0f) as u64;
                pos += 1;
            }
            0xa0..=0xbf => pos += 1 + (b & 0x1f) as usize,
            0xc4 | 0xd9 => pos += 2 + *d.get(pos + 1)? as usize,
            0xc5 | 0xda => pos += 3 + len16(pos + 1)?,
            0xc6 | 0xdb => pos += 5 + len32(pos + 1)?,
            0xc7 => pos += 3 + *d.get(pos + 1)? as usize,
            0xc8 => pos += 4 + len16(pos + 1)?,
            0xc9 => pos += 6 + len32(pos + 1)?,
            0xca => pos += 5,
            0xcb => pos += 9,
            0xcc | 0xd0 => pos += 2,
            0xcd | 0xd1 => pos += 3,
            0xce | 0xd2 => pos += 5,
            0xcf | 0xd3 => pos += 9,
            0xd4 => pos += 3,
            0xd5 => pos += 4,
            0xd6 => pos += 6,
            0xd7 => pos += 10,
            0xd8 => pos += 18,
            0xdc => {
                pending += len16(pos + 1)? as u64;
                pos += 3;
            }
            0xdd => {
                pending += len32(pos + 1)? as u64;
                pos += 5;
            }
            0xde => {
                pending += 2 * len16(pos + 1)? as u64;
                pos += 3;
            }
            0xdf => {
                pending += 2 * len32(pos + 1)? as u64;
                pos += 5;
            }
            _ => return None, // 0xc1: never used
        }
    }
    (pos <= d.len()).then_some(pos)
}

/// A string the direct path copies as it is: valid UTF-8 without a byte-order mark (`plainUtf8` in direct.ts).
fn plain_utf8(s: &[u8]) -> bool {
    !s.starts_with(&[0xef, 0xbb, 0xbf]) && (s.is_ascii() || std::str::from_utf8(s).is_ok())
}

/// The RowBatch envelope (`readHeader` in direct.ts).
struct Header {
    /// The byte ranges of the batch's column names.
    cols: Vec<(usize, usize)>,
    rows_pos: usize,
    row_count: usize,
    /// Where the rows end when they are not the envelope's last key (read by a skip); None when they are last.
    rows_end: Option<usize>,
}

fn read_header(d: &[u8]) -> Option<Header> {
    let (keys, mut pos) = read_container(d, 0, 0x80, 0xde)?;
    let (mut v, mut schema) = (false, false);
    let mut cols: Option<Vec<(usize, usize)>> = None;
    let mut rows: Option<(usize, usize, Option<usize>)> = None;
    for i in 0..keys {
        let (ks, ke) = read_str(d, pos)?;
        pos = ke;
        match &d[ks..ke] {
            b"v" if !v => {
                v = true;
                if *d.get(pos)? != 0x01 {
                    return None;
                }
                pos += 1;
            }
            b"schema" if !schema => {
                schema = true;
                match read_number(d, pos)? {
                    (Number::Num(_), next) => pos = next,
                    _ => return None,
                }
            }
            b"cols" if cols.is_none() => {
                let (n, mut p) = read_array(d, pos)?;
                let mut names = Vec::with_capacity(n.min(64));
                for _ in 0..n {
                    let (s, e) = read_str(d, p)?;
                    if !plain_utf8(&d[s..e]) {
                        return None;
                    }
                    names.push((s, e));
                    p = e;
                }
                cols = Some(names);
                pos = p;
            }
            b"rows" if rows.is_none() => {
                let (count, first) = read_array(d, pos)?;
                if i == keys - 1 {
                    rows = Some((first, count, None));
                } else {
                    pos = skip(d, pos)?;
                    rows = Some((first, count, Some(pos)));
                }
            }
            // Another key, or one seen before: not a plain RowBatch.
            _ => return None,
        }
    }
    let (rows_pos, row_count, rows_end) = rows?;
    if !v || (rows_end.is_some() && pos != d.len()) {
        return None;
    }
    Some(Header { cols: cols?, rows_pos, row_count, rows_end })
}

/// Decodes RowBatch payloads of one table layout (see the module comment). One per layout and thread.
#[napi]
pub struct RowBatchDecoder {
    fields: Vec<Field>,
    columns: Vec<Column>,
    /// Per batch column, the field it feeds (scratch of `decode`).
    field_of_col: Vec<usize>,
    named: Vec<bool>,
}

/// What `decode` answers when it leaves the payload to the JavaScript path.
const NOT_TAKEN: i32 = -1;
/// What `decode` answers when `scratch` is too small; `layout[0]` then holds the bytes it needs.
const SCRATCH_TOO_SMALL: i32 = -2;
/// Entries of `layout` per field (after `layout[0]`): values offset, validity offset (−1: no nulls), null count,
/// bytes offset and length (Utf8).
const LAYOUT_STRIDE: usize = 5;

fn align8(n: usize) -> usize {
    (n + 7) & !7
}

fn push_bit(bits: &mut Vec<u8>, i: usize, set: bool) {
    if i & 7 == 0 {
        bits.push(0);
    }
    if set {
        *bits.last_mut().expect("pushed above") |= 1 << (i & 7);
    }
}

#[napi]
impl RowBatchDecoder {
    /// A decoder for fields `names` of kinds `kinds` (native-decode.ts's codes), NOT NULL where `nullable` is false.
    #[napi(constructor)]
    pub fn new(names: Vec<String>, kinds: Vec<u32>, nullable: Vec<bool>) -> Result<Self> {
        if names.len() != kinds.len() || names.len() != nullable.len() {
            return Err(Error::new(Status::InvalidArg, "names, kinds and nullable must have one entry per field".to_string()));
        }
        let mut fields = Vec::with_capacity(names.len());
        for ((name, code), nullable) in names.into_iter().zip(kinds).zip(nullable) {
            let kind = Kind::from_code(code).ok_or_else(|| Error::new(Status::InvalidArg, format!("unknown column kind {code}")))?;
            fields.push(Field { name: name.into_bytes(), kind, nullable });
        }
        let columns = fields.iter().map(|_| Column::default()).collect();
        Ok(RowBatchDecoder { fields, columns, field_of_col: Vec::new(), named: Vec::new() })
    }

    /// Decodes one payload into `scratch` and describes it in `layout` (`1 + 5 × fields` entries): returns the row
    /// count, −1 when the payload is left to the JavaScript path, or −2 when `scratch` is smaller than `layout[0]`
    /// bytes (nothing written: call again with a larger one). Offsets in `layout` are bytes into `scratch`, each a
    /// multiple of 8.
    #[napi]
    pub fn decode(&mut self, payload: Uint8ArraySlice, mut scratch: Uint8ArraySlice, mut layout: Int32ArraySlice) -> Result<i32> {
        // SAFETY: the caller's thread is in this synchronous call, and nothing else writes these buffers meanwhile
        // (the caller owns them: one scratch and one layout per decoder and thread).
        let (out, layout) = unsafe { (scratch.as_mut(), layout.as_mut()) };
        if layout.len() < 1 + LAYOUT_STRIDE * self.fields.len() {
            return Err(Error::new(Status::InvalidArg, "layout is too short for the decoder's fields".to_string()));
        }
        let rows = crate::guarded("RowBatch decode", || Ok(self.decode_columns(&payload)))?;
        let Some(rows) = rows else { return Ok(NOT_TAKEN) };
        Ok(self.copy_out(rows, out, layout))
    }
}

impl RowBatchDecoder {
    /// Decodes every row into `self.columns`; None when the payload is not taken (see the module comment).
    fn decode_columns(&mut self, d: &[u8]) -> Option<usize> {
        let h = read_header(d)?;
        // Each row takes a byte at least: a larger count is a broken payload (and no reason to reserve memory).
        if h.row_count > d.len() {
            return None;
        }
        self.field_of_col.clear();
        self.named.clear();
        self.named.resize(self.fields.len(), false);
        for &(s, e) in &h.cols {
            let k = self.fields.iter().position(|f| f.name == d[s..e])?;
            if self.named[k] {
                return None; // a repeated column
            }
            self.named[k] = true;
            self.field_of_col.push(k);
        }
        for (f, c) in self.fields.iter().zip(&mut self.columns) {
            c.clear();
            c.values.reserve(match f.kind {
                Kind::Boolean => h.row_count.div_ceil(8),
                Kind::Utf8 => 4 * h.row_count,
                k => k.width() * h.row_count,
            });
        }
        let width = h.cols.len();
        let mut pos = h.rows_pos;
        for row in 0..h.row_count {
            let (n, mut p) = read_array(d, pos)?;
            if n > width {
                return None;
            }
            for j in 0..n {
                let k = self.field_of_col[j];
                p = append_value(&self.fields[k], &mut self.columns[k], row, d, p)?;
            }
            // Fields beyond the row's values, and those the batch does not name, are nulls.
            for j in n..width {
                let k = self.field_of_col[j];
                append_null(&self.fields[k], &mut self.columns[k], row)?;
            }
            for k in 0..self.fields.len() {
                if !self.named[k] {
                    append_null(&self.fields[k], &mut self.columns[k], row)?;
                }
            }
            pos = p;
        }
        match h.rows_end {
            None if pos != d.len() => None,
            Some(end) if pos != end => None,
            _ => Some(h.row_count),
        }
    }

    /// Copies the decoded columns into `out` and describes them in `layout`; the row count, or SCRATCH_TOO_SMALL.
    fn copy_out(&self, rows: usize, out: &mut [u8], layout: &mut [i32]) -> i32 {
        let mut at = 0usize;
        let mut plan = Vec::with_capacity(self.fields.len());
        for (f, c) in self.fields.iter().zip(&self.columns) {
            let values = at;
            let values_len = match f.kind {
                Kind::Utf8 => 4 * (rows + 1),
                _ => c.values.len(),
            };
            at += align8(values_len);
            let validity = if c.null_rows.is_empty() { None } else { Some(at) };
            if validity.is_some() {
                at += align8(rows.div_ceil(8));
            }
            let bytes = at;
            at += align8(c.bytes.len());
            plan.push((values, validity, bytes));
        }
        if at > out.len() || at > i32::MAX as usize {
            layout[0] = i32::try_from(at).unwrap_or(i32::MAX);
            return SCRATCH_TOO_SMALL;
        }
        layout[0] = at as i32;
        for (k, ((f, c), (values, validity, bytes))) in self.fields.iter().zip(&self.columns).zip(plan).enumerate() {
            if f.kind == Kind::Utf8 {
                out[values..values + 4].copy_from_slice(&0i32.to_le_bytes());
                out[values + 4..values + 4 + c.values.len()].copy_from_slice(&c.values);
            } else {
                out[values..values + c.values.len()].copy_from_slice(&c.values);
            }
            if let Some(v) = validity {
                let bits = &mut out[v..v + rows.div_ceil(8)];
                bits.fill(0xff);
                if rows & 7 != 0 {
                    *bits.last_mut().expect("rows > 0: a null is there") = (1u8 << (rows & 7)) - 1;
                }
                for &r in &c.null_rows {
                    bits[r as usize >> 3] &= !(1 << (r & 7));
                }
            }
            out[bytes..bytes + c.bytes.len()].copy_from_slice(&c.bytes);
            let l = &mut layout[1 + k * LAYOUT_STRIDE..1 + (k + 1) * LAYOUT_STRIDE];
            l[0] = values as i32;
            l[1] = validity.map_or(-1, |v| v as i32);
            l[2] = c.null_rows.len() as i32;
            l[3] = bytes as i32;
            l[4] = c.bytes.len() as i32;
        }
        rows as i32
    }
}

/// A null in row `row` of `c`: None when the column is NOT NULL (the JavaScript path then rejects the row).
fn append_null(f: &Field, c: &mut Column, row: usize) -> Option<()> {
    if !f.nullable {
        return None;
    }
    c.null_rows.push(row as u32);
    match f.kind {
        Kind::Boolean => push_bit(&mut c.values, row, false),
        Kind::Utf8 => c.values.extend_from_slice(&(c.bytes.len() as i32).to_le_bytes()),
        k => c.values.resize(c.values.len() + k.width(), 0),
    }
    Some(())
}

/// The value at `pos` appended to row `row` of `c` as the direct path's appender of its kind would take it (`appenderFor`
/// in direct.ts); the position after it, or None where that appender gives the row up.
fn append_value(f: &Field, c: &mut Column, row: usize, d: &[u8], pos: usize) -> Option<usize> {
    if *d.get(pos)? == 0xc0 {
        append_null(f, c, row)?;
        return Some(pos + 1);
    }
    let next = match f.kind {
        Kind::Boolean => {
            let b = d[pos];
            if b != 0xc2 && b != 0xc3 {
                return None;
            }
            push_bit(&mut c.values, row, b == 0xc3);
            pos + 1
        }
        Kind::Utf8 => {
            let (s, e) = read_str(d, pos)?;
            if !plain_utf8(&d[s..e]) {
                return None;
            }
            c.bytes.extend_from_slice(&d[s..e]);
            // A column chunk's bytes stay within Int32 offsets (the builder refuses more).
            let end = i32::try_from(c.bytes.len()).ok()?;
            c.values.extend_from_slice(&end.to_le_bytes());
            e
        }
        kind => {
            let (num, next) = read_number(d, pos)?;
            match (kind, num) {
                // `(v << shift) >> shift === v`: an integer (or −0) within the type's range.
                (Kind::Int32, Number::Num(v)) if v == (v as i32) as f64 => c.values.extend_from_slice(&(v as i32).to_le_bytes()),
                (Kind::Int16, Number::Num(v)) if v == (v as i16) as f64 => c.values.extend_from_slice(&(v as i16).to_le_bytes()),
                (Kind::Int8, Number::Num(v)) if v == (v as i8) as f64 => c.values.extend_from_slice(&(v as i8).to_le_bytes()),
                (Kind::Int64, Number::Num(v)) if safe_integer(v) => c.values.extend_from_slice(&(v as i64).to_le_bytes()),
                (Kind::Int64, Number::Big(v)) => c.values.extend_from_slice(&i64::try_from(v).ok()?.to_le_bytes()),
                (Kind::Float64, Number::Num(v)) => c.values.extend_from_slice(&v.to_le_bytes()),
                // Math.fround: round to nearest, ties to even, as `as f32` does.
                (Kind::Float32, Number::Num(v)) => c.values.extend_from_slice(&(v as f32).to_le_bytes()),
                // Epoch millis in the column's unit; beyond its 64-bit range the builder throws and the row rolls back.
                (Kind::Timestamp(factor), Number::Num(v)) if safe_integer(v) => c.values.extend_from_slice(&(v as i64).checked_mul(factor)?.to_le_bytes()),
                _ => return None,
            }
            next
        }
    };
    Some(next)
}
