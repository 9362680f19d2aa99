//! A primary-key bucket's merge-on-read for the deduplicate engine (no `sequence.field`, no lookup levels), done
//! where the files are decoded: src/lsm/merge-reader.ts `mergeBucketFiles` with the newest version of each key
//! winning, without the round trip of every decoded column through Arrow IPC and JavaScript.
//!
//! JavaScript decides whether a bucket qualifies (src/scan/native-bucket-merge.ts) and hands over the sections and
//! sorted runs it computed from the files' metadata (the same `sections` and `runsOf` the JS merge uses); this
//! module decodes each run a record batch at a time (memory grows with the runs, not with the rows), merges the runs
//! by key in Paimon's order, keeps per key the newest version by `_SEQUENCE_NUMBER` (an addition after a retraction
//! of the same sequence number; with ignore-delete the newest addition) and drops surviving retractions, as the JS
//! merge does. Output batches are slices of the decoded columns where one run's rows follow one another, else
//! gathered (arrow-select).
//!
//! Key order is Paimon's (src/lsm/key-comparator.ts): field by field, nulls first, integers and dates by value,
//! strings and binaries as unsigned bytes (UTF-8 byte order is code point order). Other key types are refused when
//! the merge is opened, and JavaScript merges such buckets itself.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Int16Type, Int32Type, Int64Type, Int8Type};
use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchReader};
use arrow_buffer::{NullBuffer, ScalarBuffer};
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use bytes::Bytes;
use napi::bindgen_prelude::{BufferSlice, Uint8Array};
use napi::{Env, Error, Result, Status};
use napi_derive::napi;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;

use crate::{failed, guarded, without_view_types};

const SEQUENCE: &str = "_SEQUENCE_NUMBER";
const KIND: &str = "_VALUE_KIND";

/// What the merge reads and returns. `sections` are the bucket's sections in key order, each its sorted runs, each
/// run its files (indexes into the files) in key order.
#[napi(object)]
pub struct BucketMergeSpec {
    pub key_columns: Vec<String>,
    pub output_columns: Vec<String>,
    pub sections: Vec<Vec<Vec<u32>>>,
    /// The manifest's row count of each file, checked against the file's footer.
    pub row_counts: Vec<f64>,
    pub ignore_delete: bool,
    pub batch_rows: u32,
}

/// Errors JavaScript tells apart by their prefix: a file that does not decode names its index (as
/// MergeFileDecodeError does); a row count that disagrees with the manifest names the file and its rows; a bucket
/// this merge does not handle is `unsupported` (raised only when the merge is opened, before any row went out).
fn file_error(file: usize, context: &str, e: impl std::fmt::Display) -> Error {
    Error::new(Status::GenericFailure, format!("[file {file}] {context}: {e}"))
}

fn unsupported(why: String) -> Error {
    Error::new(Status::InvalidArg, format!("[unsupported] {why}"))
}

/// One key column of a decoded batch, in the form its order compares.
enum KeyColumn {
    /// Integers and dates widened to i64 (an Int64 column's own buffer, shared).
    Int(ScalarBuffer<i64>, Option<NullBuffer>),
    Utf8(arrow_array::StringArray),
    LargeUtf8(arrow_array::LargeStringArray),
    Binary(arrow_array::BinaryArray),
    LargeBinary(arrow_array::LargeBinaryArray),
    FixedBinary(arrow_array::FixedSizeBinaryArray),
}

fn key_type_supported(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 | DataType::Date32 | DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary | DataType::FixedSizeBinary(_)
    )
}

fn widened<T: arrow_array::ArrowPrimitiveType>(a: &ArrayRef) -> KeyColumn
where
    T::Native: Into<i64>,
{
    let p = a.as_primitive::<T>();
    KeyColumn::Int(p.values().iter().map(|&v| v.into()).collect::<Vec<i64>>().into(), p.nulls().cloned())
}

impl KeyColumn {
    fn of(a: &ArrayRef) -> KeyColumn {
        match a.data_type() {
            DataType::Int8 => widened::<Int8Type>(a),
            DataType::Int16 => widened::<Int16Type>(a),
            DataType::Int32 => widened::<Int32Type>(a),
            DataType::Date32 => widened::<Date32Type>(a),
            DataType::Int64 => {
                let p = a.as_primitive::<Int64Type>();
                KeyColumn::Int(p.values().clone(), p.nulls().cloned())
            }
            DataType::Utf8 => KeyColumn::Utf8(a.as_string::<i32>().clone()),
            DataType::LargeUtf8 => KeyColumn::LargeUtf8(a.as_string::<i64>().clone()),
            DataType::Binary => KeyColumn::Binary(a.as_binary::<i32>().clone()),
            DataType::LargeBinary => KeyColumn::LargeBinary(a.as_binary::<i64>().clone()),
            DataType::FixedSizeBinary(_) => KeyColumn::FixedBinary(a.as_fixed_size_binary().clone()),
            // Refused when the merge is opened (`key_type_supported`).
            other => unreachable!("key type {other} passed the check"),
        }
    }

    fn is_null(&self, i: usize) -> bool {
        match self {
            KeyColumn::Int(_, nulls) => nulls.as_ref().is_some_and(|n| n.is_null(i)),
            KeyColumn::Utf8(a) => a.is_null(i),
            KeyColumn::LargeUtf8(a) => a.is_null(i),
            KeyColumn::Binary(a) => a.is_null(i),
            KeyColumn::LargeBinary(a) => a.is_null(i),
            KeyColumn::FixedBinary(a) => a.is_null(i),
        }
    }

    fn bytes(&self, i: usize) -> &[u8] {
        match self {
            KeyColumn::Utf8(a) => a.value(i).as_bytes(),
            KeyColumn::LargeUtf8(a) => a.value(i).as_bytes(),
            KeyColumn::Binary(a) => a.value(i),
            KeyColumn::LargeBinary(a) => a.value(i),
            KeyColumn::FixedBinary(a) => a.value(i),
            KeyColumn::Int(..) => &[],
        }
    }

    /// Row `i` here against row `j` of the same key column of another batch (of the same type: every file of the
    /// merge has the same column types), nulls first.
    fn compare(&self, i: usize, other: &KeyColumn, j: usize) -> Ordering {
        match (self.is_null(i), other.is_null(j)) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            _ => {}
        }
        match (self, other) {
            (KeyColumn::Int(a, _), KeyColumn::Int(b, _)) => a[i].cmp(&b[j]),
            // Unsigned byte order; `[u8]`'s order is lexicographic, a prefix first.
            _ => self.bytes(i).cmp(other.bytes(j)),
        }
    }
}

/// A decoded batch of a run with what the merge compares.
struct Source {
    /// The output columns.
    columns: Vec<ArrayRef>,
    keys: Vec<KeyColumn>,
    /// A single non-null integer key: compared without the general path.
    int_key: Option<ScalarBuffer<i64>>,
    sequence: ScalarBuffer<i64>,
    kind: ScalarBuffer<i8>,
    rows: usize,
}

impl Source {
    fn compare(&self, i: usize, other: &Source, j: usize) -> Ordering {
        if let (Some(a), Some(b)) = (&self.int_key, &other.int_key) {
            return a[i].cmp(&b[j]);
        }
        for (a, b) in self.keys.iter().zip(&other.keys) {
            let c = a.compare(i, b, j);
            if c != Ordering::Equal {
                return c;
            }
        }
        Ordering::Equal
    }
}

/// -U and -D take a key's earlier version back (src/lsm/row-kind.ts `isRetract`).
fn is_retract(kind: i8) -> bool {
    kind == 1 || kind == 3
}

/// Where the columns the merge needs are in a file's decoded batches.
#[derive(Clone)]
struct Layout {
    keys: Vec<usize>,
    sequence: usize,
    kind: usize,
    output: Vec<usize>,
}

/// A run's rows in key order, a decoded batch at a time.
struct RunCursor {
    files: Vec<usize>,
    next_file: usize,
    reader: Option<(usize, ParquetRecordBatchReader, Layout, usize)>,
    current: Option<Arc<Source>>,
    row: usize,
}

/// An output batch being assembled: stretches of rows of source batches.
struct Pending {
    sources: Vec<Arc<Source>>,
    /// (source slot, first row, rows)
    stretches: Vec<(usize, usize, usize)>,
    rows: usize,
}

impl Pending {
    fn slot_of(&mut self, source: &Arc<Source>) -> usize {
        match self.sources.iter().rposition(|s| Arc::ptr_eq(s, source)) {
            Some(i) => i,
            None => {
                self.sources.push(source.clone());
                self.sources.len() - 1
            }
        }
    }

    fn push(&mut self, slot: usize, row: usize) {
        match self.stretches.last_mut() {
            Some((s, start, len)) if *s == slot && *start + *len == row => *len += 1,
            _ => self.stretches.push((slot, row, 1)),
        }
        self.rows += 1;
    }
}

struct Merger {
    files: Vec<Option<Bytes>>,
    metadata: Vec<Option<ArrowReaderMetadata>>,
    key_columns: Vec<String>,
    output_columns: Vec<String>,
    sections: std::vec::IntoIter<Vec<Vec<u32>>>,
    row_counts: Vec<f64>,
    ignore_delete: bool,
    batch_rows: usize,
    schema: SchemaRef,
    cursors: Vec<RunCursor>,
    pending: Pending,
    /// Set once an error (or a panic) left the state behind: every later call fails.
    broken: bool,
    /// Scratch: the cursors at the smallest key.
    group: Vec<usize>,
}

fn column_index(schema: &Schema, name: &str, file: usize) -> Result<usize> {
    schema.index_of(name).map_err(|_| unsupported(format!("file {file} has no column {name}")))
}

impl Merger {
    fn open(files: Vec<Bytes>, spec: BucketMergeSpec) -> Result<Merger> {
        if spec.row_counts.len() != files.len() {
            return Err(Error::new(Status::InvalidArg, format!("{} row counts for {} files", spec.row_counts.len(), files.len())));
        }
        if spec.key_columns.is_empty() {
            return Err(unsupported("no key columns".to_string()));
        }
        // Every file's footer now: a bucket this merge cannot handle is refused before a row goes out.
        let mut metadata = Vec::with_capacity(files.len());
        let mut schema: Option<SchemaRef> = None;
        let mut key_types: Vec<DataType> = Vec::new();
        for (k, data) in files.iter().enumerate() {
            let m = ArrowReaderMetadata::load(data, ArrowReaderOptions::default()).map_err(|e| file_error(k, "reading the Parquet footer", e))?;
            let m = without_view_types(m).map_err(|e| file_error(k, "reading the Parquet footer", e.reason))?;
            let rows = m.metadata().file_metadata().num_rows();
            let s = m.schema();
            let seq = s.field(column_index(s, SEQUENCE, k)?);
            let kind = s.field(column_index(s, KIND, k)?);
            if seq.data_type() != &DataType::Int64 || kind.data_type() != &DataType::Int8 {
                return Err(unsupported(format!("file {k}: {SEQUENCE} is {}, {KIND} is {}", seq.data_type(), kind.data_type())));
            }
            let keys: Vec<DataType> = spec.key_columns.iter().map(|c| column_index(s, c, k).map(|i| s.field(i).data_type().clone())).collect::<Result<_>>()?;
            if let Some(t) = keys.iter().find(|t| !key_type_supported(t)) {
                return Err(unsupported(format!("key type {t}")));
            }
            let out: Vec<Field> = spec.output_columns.iter().map(|c| column_index(s, c, k).map(|i| s.field(i).clone())).collect::<Result<_>>()?;
            match &schema {
                None => {
                    schema = Some(Arc::new(Schema::new(out)));
                    key_types = keys;
                }
                Some(first) => {
                    // One output type per column across the files (no schema evolution here).
                    let same = first.fields().iter().zip(&out).all(|(a, b)| a.data_type() == b.data_type());
                    if !same || keys != key_types {
                        return Err(unsupported(format!("file {k}'s column types differ from file 0's")));
                    }
                }
            }
            if rows as f64 != spec.row_counts[k] {
                return Err(Error::new(Status::GenericFailure, format!("[rows {k} {rows}] row count differs from the manifest")));
            }
            metadata.push(Some(m));
        }
        let schema = schema.unwrap_or_else(|| Arc::new(Schema::empty()));
        Ok(Merger {
            files: files.into_iter().map(Some).collect(),
            metadata,
            key_columns: spec.key_columns,
            output_columns: spec.output_columns,
            sections: spec.sections.into_iter(),
            row_counts: spec.row_counts,
            ignore_delete: spec.ignore_delete,
            batch_rows: spec.batch_rows.max(1) as usize,
            schema,
            cursors: Vec::new(),
            pending: Pending { sources: Vec::new(), stretches: Vec::new(), rows: 0 },
            broken: false,
            group: Vec::new(),
        })
    }

    /// A reader of file `k`'s merge columns; its bytes and footer are let go (each file is read once).
    fn reader(&mut self, k: usize) -> Result<(ParquetRecordBatchReader, Layout)> {
        let data = self.files.get_mut(k).and_then(Option::take).ok_or_else(|| failed("bucket merge", format!("file {k} is read twice")))?;
        let m = self.metadata[k].take().expect("each file's footer is read once");
        let mut builder = ParquetRecordBatchReaderBuilder::new_with_metadata(data, m).with_batch_size(self.batch_rows);
        let wanted: Vec<&str> = self.key_columns.iter().chain(&self.output_columns).map(String::as_str).chain([SEQUENCE, KIND]).collect();
        let roots: Vec<usize> = builder.schema().fields().iter().enumerate().filter(|(_, f)| wanted.contains(&f.name().as_str())).map(|(i, _)| i).collect();
        let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
        builder = builder.with_projection(mask);
        let reader = builder.build().map_err(|e| file_error(k, "Parquet decode", e))?;
        let s = reader.schema();
        let at = |name: &str| s.index_of(name).map_err(|_| file_error(k, "Parquet decode", format!("decoded batch lacks column {name}")));
        let layout = Layout {
            keys: self.key_columns.iter().map(|c| at(c)).collect::<Result<_>>()?,
            sequence: at(SEQUENCE)?,
            kind: at(KIND)?,
            output: self.output_columns.iter().map(|c| at(c)).collect::<Result<_>>()?,
        };
        Ok((reader, layout))
    }

    /// Moves `cursor` to its next non-empty decoded batch; false at the run's end.
    fn advance(&mut self, c: usize) -> Result<bool> {
        loop {
            if self.cursors[c].reader.is_none() {
                let cur = &self.cursors[c];
                let Some(&k) = cur.files.get(cur.next_file) else {
                    self.cursors[c].current = None;
                    return Ok(false);
                };
                self.cursors[c].next_file += 1;
                let (reader, layout) = self.reader(k)?;
                self.cursors[c].reader = Some((k, reader, layout, 0));
            }
            let (k, reader, layout, decoded) = self.cursors[c].reader.as_mut().unwrap();
            let k = *k;
            match reader.next() {
                Some(batch) => {
                    let batch = batch.map_err(|e| file_error(k, "Parquet decode", e))?;
                    *decoded += batch.num_rows();
                    if batch.num_rows() == 0 {
                        continue;
                    }
                    let source = prepare(&batch, layout).map_err(|e| file_error(k, "Parquet decode", e))?;
                    let cur = &mut self.cursors[c];
                    cur.current = Some(Arc::new(source));
                    cur.row = 0;
                    return Ok(true);
                }
                None => {
                    let decoded = *decoded;
                    if decoded as f64 != self.row_counts[k] {
                        return Err(Error::new(Status::GenericFailure, format!("[rows {k} {decoded}] row count differs from the manifest")));
                    }
                    self.cursors[c].reader = None;
                }
            }
        }
    }

    /// Opens the next section's runs; false when every section is merged.
    fn open_section(&mut self) -> Result<bool> {
        let Some(runs) = self.sections.next() else { return Ok(false) };
        self.cursors = runs
            .into_iter()
            .map(|files| RunCursor { files: files.into_iter().map(|f| f as usize).collect(), next_file: 0, reader: None, current: None, row: 0 })
            .collect();
        for c in 0..self.cursors.len() {
            self.advance(c)?;
        }
        self.cursors.retain(|c| c.current.is_some());
        Ok(true)
    }

    /// Steps cursor `c` past `rows` rows of its current batch (never beyond it); drops it at its run's end.
    fn step(&mut self, c: usize, rows: usize) -> Result<bool> {
        let cur = &mut self.cursors[c];
        cur.row += rows;
        if cur.row < cur.current.as_ref().unwrap().rows {
            return Ok(true);
        }
        self.advance(c)
    }

    /// Merges until an output batch is full or the bucket is done; the batch, or None at the end.
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            if self.pending.rows >= self.batch_rows {
                return self.flush().map(Some);
            }
            if self.cursors.is_empty() {
                if !self.open_section()? {
                    return if self.pending.rows > 0 { self.flush().map(Some) } else { Ok(None) };
                }
                continue;
            }
            self.merge_step()?;
        }
    }

    /// One step of the k-way merge: a stretch of one run's rows below every other run's key, or one key's versions.
    fn merge_step(&mut self) -> Result<()> {
        let mut group = std::mem::take(&mut self.group);
        group.clear();
        // The smallest key's cursor, the others at that key, and the cursor at the next larger key among the rest
        // (compared in place: a merge steps once per key).
        let (min, second) = {
            let cs = &self.cursors;
            let at = |c: usize| (cs[c].current.as_deref().unwrap(), cs[c].row);
            let mut min = 0;
            for c in 1..cs.len() {
                let ((a, ra), (b, rb)) = (at(c), at(min));
                if a.compare(ra, b, rb) == Ordering::Less {
                    min = c;
                }
            }
            let (m, rm) = at(min);
            group.push(min);
            let mut second: Option<usize> = None;
            for c in 0..cs.len() {
                if c == min {
                    continue;
                }
                let (a, ra) = at(c);
                if a.compare(ra, m, rm) == Ordering::Equal {
                    group.push(c);
                } else if second.is_none_or(|s| {
                    let (b, rb) = at(s);
                    a.compare(ra, b, rb) == Ordering::Less
                }) {
                    second = Some(c);
                }
            }
            (min, second)
        };
        if group.len() == 1 {
            self.group = group;
            // The rows of this batch below every other run's key have no other version: a stretch at once.
            let m = self.cursors[min].current.clone().unwrap();
            let rm = self.cursors[min].row;
            let end = match second {
                None => m.rows,
                Some(s) => stretch_end(&m, rm, self.cursors[s].current.as_deref().unwrap(), self.cursors[s].row),
            };
            let end = end.min(rm + (self.batch_rows - self.pending.rows).max(1));
            let slot = self.pending.slot_of(&m);
            for r in rm..end {
                if !is_retract(m.kind[r]) {
                    self.pending.push(slot, r);
                }
            }
            if !self.step(min, end - rm)? {
                self.cursors.remove(min);
            }
            return Ok(());
        }
        // Several versions: the newest (with ignore-delete the newest addition) goes out unless it is a retraction.
        let mut best: Option<usize> = None;
        for &c in &group {
            let cur = &self.cursors[c];
            let (s, r) = (cur.current.as_deref().unwrap(), cur.row);
            if self.ignore_delete && is_retract(s.kind[r]) {
                continue;
            }
            if best.is_none_or(|b| {
                let bc = &self.cursors[b];
                !newer_version(bc.current.as_deref().unwrap(), bc.row, s, r)
            }) {
                best = Some(c);
            }
        }
        if let Some(b) = best {
            let (s, r) = (self.cursors[b].current.clone().unwrap(), self.cursors[b].row);
            if !is_retract(s.kind[r]) {
                let slot = self.pending.slot_of(&s);
                self.pending.push(slot, r);
            }
        }
        // Stepped from the last so that removing exhausted cursors keeps the others' indexes.
        group.sort_unstable();
        for &c in group.iter().rev() {
            if !self.step(c, 1)? {
                self.cursors.remove(c);
            }
        }
        self.group = group;
        Ok(())
    }

    fn flush(&mut self) -> Result<RecordBatch> {
        let p = std::mem::replace(&mut self.pending, Pending { sources: Vec::new(), stretches: Vec::new(), rows: 0 });
        let columns: Vec<ArrayRef> = (0..self.schema.fields().len())
            .map(|k| {
                if let [(slot, start, len)] = p.stretches[..] {
                    return Ok(p.sources[slot].columns[k].slice(start, len));
                }
                // Long stretches are copied whole; single rows picked one by one.
                if p.stretches.len() * 16 <= p.rows {
                    let parts: Vec<ArrayRef> = p.stretches.iter().map(|&(slot, start, len)| p.sources[slot].columns[k].slice(start, len)).collect();
                    let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
                    arrow_select::concat::concat(&refs)
                } else {
                    let arrays: Vec<&dyn Array> = p.sources.iter().map(|s| s.columns[k].as_ref()).collect();
                    let picks: Vec<(usize, usize)> = p.stretches.iter().flat_map(|&(slot, start, len)| (start..start + len).map(move |r| (slot, r))).collect();
                    arrow_select::interleave::interleave(&arrays, &picks)
                }
                .map_err(|e| failed("gathering the merged rows", e))
            })
            .collect::<Result<_>>()?;
        let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(p.rows));
        RecordBatch::try_new_with_options(self.schema.clone(), columns, &options).map_err(|e| failed("gathering the merged rows", e))
    }
}

/// The last row + 1 of `a` from `ra` on whose key is below row `rb` of `b`: galloping, then a binary search, so a
/// long stretch of a compacted run costs a few comparisons.
fn stretch_end(a: &Source, ra: usize, b: &Source, rb: usize) -> usize {
    let below = |r: usize| a.compare(r, b, rb) == Ordering::Less;
    // a[ra] is below (it is the smallest key).
    let mut lo = ra;
    let mut step = 1;
    while lo + step < a.rows && below(lo + step) {
        lo += step;
        step *= 2;
    }
    let mut hi = (lo + step).min(a.rows);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if below(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo + 1
}

/// Whether version (a, ra) comes after (b, rb) in merge order: the sequence number, then an addition after a
/// retraction.
fn newer_version(a: &Source, ra: usize, b: &Source, rb: usize) -> bool {
    let (sa, sb) = (a.sequence[ra], b.sequence[rb]);
    if sa != sb {
        return sa > sb;
    }
    is_retract(b.kind[rb]) && !is_retract(a.kind[ra])
}

fn prepare(batch: &RecordBatch, layout: &Layout) -> std::result::Result<Source, String> {
    let seq = batch.column(layout.sequence);
    let kind = batch.column(layout.kind);
    if seq.null_count() > 0 || kind.null_count() > 0 {
        return Err(format!("{SEQUENCE} or {KIND} has nulls"));
    }
    let keys: Vec<KeyColumn> = layout.keys.iter().map(|&i| KeyColumn::of(batch.column(i))).collect();
    let int_key = match &keys[..] {
        [KeyColumn::Int(values, None)] => Some(values.clone()),
        _ => None,
    };
    Ok(Source {
        columns: layout.output.iter().map(|&i| batch.column(i).clone()).collect(),
        keys,
        int_key,
        sequence: seq.as_primitive::<Int64Type>().values().clone(),
        kind: kind.as_primitive::<Int8Type>().values().clone(),
        rows: batch.num_rows(),
    })
}

fn ipc_stream(schema: &SchemaRef, batch: Option<&RecordBatch>) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut writer = StreamWriter::try_new(&mut out, schema).map_err(|e| failed("writing the Arrow IPC stream", e))?;
    if let Some(b) = batch {
        writer.write(b).map_err(|e| failed("writing the Arrow IPC stream", e))?;
    }
    writer.finish().map_err(|e| failed("writing the Arrow IPC stream", e))?;
    drop(writer);
    Ok(out)
}

/// The merge of one bucket, an output batch per `next()` (src/scan/native-bucket-merge.ts).
#[napi]
pub struct BucketMerge {
    merger: Merger,
}

#[napi]
impl BucketMerge {
    /// Takes a copy of the files' bytes (the caller may let its own go) and reads every footer: a bucket this merge
    /// does not handle fails here with an `[unsupported]` message.
    #[napi(constructor)]
    pub fn new(files: Vec<Uint8Array>, spec: BucketMergeSpec) -> Result<Self> {
        guarded("bucket merge", || {
            let files: Vec<Bytes> = files.iter().map(|f| Bytes::copy_from_slice(f)).collect();
            Ok(BucketMerge { merger: Merger::open(files, spec)? })
        })
    }

    /// The output columns' schema as an IPC stream without batches.
    #[napi]
    pub fn schema<'env>(&self, env: &'env Env) -> Result<BufferSlice<'env>> {
        let bytes = ipc_stream(&self.merger.schema, None)?;
        BufferSlice::copy_from(env, bytes)
    }

    /// Lets go of the files' bytes and the decoded batches now (a read stopped early), not when V8 collects this
    /// object; later calls of `next` fail.
    #[napi]
    pub fn close(&mut self) {
        let m = &mut self.merger;
        m.files.clear();
        m.metadata.clear();
        m.cursors.clear();
        m.sections = Vec::new().into_iter();
        m.pending = Pending { sources: Vec::new(), stretches: Vec::new(), rows: 0 };
        m.broken = true;
    }

    /// The next output batch as an IPC stream (schema and one batch) in memory V8 owns; null at the end.
    #[napi]
    pub fn next<'env>(&mut self, env: &'env Env) -> Result<Option<BufferSlice<'env>>> {
        if self.merger.broken {
            return Err(failed("bucket merge", "an earlier call failed"));
        }
        let merger = &mut self.merger;
        let batch = guarded("bucket merge", || merger.next_batch());
        let batch = match batch {
            Ok(b) => b,
            Err(e) => {
                self.merger.broken = true;
                return Err(e);
            }
        };
        match batch {
            None => Ok(None),
            Some(b) => {
                let bytes = ipc_stream(&self.merger.schema, Some(&b))?;
                BufferSlice::copy_from(env, bytes).map(Some)
            }
        }
    }
}
