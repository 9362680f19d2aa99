import org.apache.paimon.Snapshot;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.deletionvectors.Bitmap64DeletionVector;
import org.apache.paimon.deletionvectors.BitmapDeletionVector;
import org.apache.paimon.deletionvectors.DeletionVector;
import org.apache.paimon.deletionvectors.append.BaseAppendDeleteFileMaintainer;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.index.IndexFileHandler;
import org.apache.paimon.index.IndexFileMeta;
import org.apache.paimon.io.CompactIncrement;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.io.DataIncrement;
import org.apache.paimon.manifest.FileKind;
import org.apache.paimon.manifest.IndexManifestEntry;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.CommitMessageImpl;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.EndOfScanException;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.table.source.StreamTableScan;
import org.apache.paimon.table.source.TableRead;
import org.apache.paimon.table.source.TableScan;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;
import org.apache.paimon.utils.SnapshotManager;

import java.io.PrintStream;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * natslake's Java Paimon oracle for primary-key tables (paimon-bundle 1.4.2): reads at a snapshot or tag, streaming
 * reads with row kinds, batch writes and full compactions of existing tables, table creation, and a write benchmark.
 * One JSON document on stdin, one JSON line out per request (in order), so one JVM start serves many requests:
 *
 * <pre>
 * java -cp lib/*:classes PaimonPk &lt; {"warehouse": DIR, "requests": [REQUEST...]}
 *   {"op": "read", "table": "db.t", "snapshotId"?: N, "tag"?: NAME, "columns"?: [..]}
 *       → {"snapshotIds": [..], "rows": [ROW...]}                       (rows in Java's split order)
 *   {"op": "stream", "table", "options"?: {k: v}, "columns"?, "maxPlans"?: 10000}
 *       → {"plans": [{"snapshotIds": [..], "rows": n}...], "changes": [{"snapshotId", "kind", "row"}...],
 *          "nextSnapshotId"}
 *   {"op": "write", "table", "batches": [[{"kind"?: "+I", "row": ROW, "bucket"?: N}...]...], "compact"?: bool}
 *       → {"commits": [{"batch": i | "compact", "snapshots": [{"id", "commitKind"}...]}...]}
 *   {"op": "create", "table", "fields": [{"name", "type": PAIMON-TYPE-JSON}...], "partitionKeys"?, "primaryKeys"?,
 *    "options"?} → {"schema": SCHEMA-FILE-JSON}
 *   {"op": "bench-write", "rows": N, "warmupRows"?: N, "buckets"?: 4, "options"?: {k: v}} → figures
 *   {"op": "delete-rows", "table", "positions": {DATA-FILE-NAME | "*": [row position...]...}}
 *       → {"commits": [{"batch": 0, "snapshots": [...]}]}   (an append table with deletion vectors: see deleteRows)
 * </pre>
 *
 * ROW: {column: value} in PaimonJson's form (PaimonRead's rendering). A request that fails prints {"error": chain of
 * exception messages} (with what it did before failing, e.g. the commits of a write); a malformed document: a stack
 * trace on stderr and exit 1. The catalog runs without its cache, so every request sees the files as they are.
 *
 * stream: ReadBuilder.newStreamScan() on the table copied with the given options (scan.mode, scan.snapshot-id, …),
 * planned until a plan is empty and the next snapshot it would read does not exist yet (the table is quiet while
 * this runs). Every split is read on its own, so each row carries the snapshot of its split (DataSplit.snapshotId())
 * and its RowKind as Java yields it. What Java yields (DataTableStreamScan, 1.4.2): the first plan comes from the
 * starting scanner — for latest-full / default (FullStartingScanner) or from-snapshot-full the whole table at that
 * snapshot, as a batch read gives it (ScanMode.ALL, not streaming splits): the live rows; a bucket read merged
 * (MergeFileSplitRead without keep-delete) gives each the kind of its surviving version, +I or +U, a raw-convertible
 * one (PrimaryKeyTableRawFileSplitReadProvider: e.g. one file without retractions) +I throughout; for from-snapshot
 * (ContinuousFromSnapshotStartingScanner) no rows, only the next snapshot to
 * read. Then one plan per later snapshot the follow-up scanner accepts: changelog-producer = none →
 * DeltaFollowUpScanner, APPEND snapshots only, their new data files (ScanMode.DELTA), read unmerged with deletes kept
 * (streaming splits: MergeFileSplitRead.createNoMergeReader(keepDelete = true)) — so what one commit wrote per key
 * after the writer's own folding, with kinds; changelog-producer = input → ChangelogFollowUpScanner, snapshots with
 * a changelog manifest list, their changelog files (ScanMode.CHANGELOG), every change as written, with its kind.
 * COMPACT snapshots add nothing to either.
 *
 * write: one BatchWriteBuilder per batch (a batch builder commits once), BatchTableWrite.write(row) or write(row,
 * bucket) with the row's RowKind, prepareCommit, BatchTableCommit.commit — Java restores each bucket it writes from
 * the latest snapshot (levels, max sequence number) and may compact at prepareCommit (the commit then makes an APPEND
 * and a COMPACT snapshot). compact: BatchTableWrite.compact(partition, bucket, true) for every (partition, bucket)
 * of the latest snapshot, one commit.
 *
 * bench-write: table bench.warmup (warmupRows rows, not measured: the JIT compiles the write path) then
 * bench.measured, both `id BIGINT NOT NULL (primary key), ts TIMESTAMP(3), user STRING, event STRING, amount DOUBLE,
 * qty INT` with `buckets` buckets, written by one BatchTableWrite from this thread and committed once. Row i
 * (generated before the clock starts; natslake's bench/shape.ts `benchUpsertRow` makes the same rows): every tenth row
 * (i % 10 == 9) updates an earlier key, the others insert key i; with sparseUpdates the updating rows have `event`
 * and `qty` null (what a partial update leaves alone). Measured: write + prepareCommit + commit. "table" names the
 * measured table (default bench.measured; bench.warmup is dropped and written again by each request).
 *
 * bench-read: full batch reads of an existing table (plan + read of every split, all columns, merged as any batch
 * read is). warmupReads reads first (not measured: the JIT compiles the read path; the first one also computes the
 * checksum), then `reads` measured reads that only count the rows they get. Figures: rows per read, wall time of the
 * measured reads together and each, CPU of this thread and of the JVM, GC time, and the checksum — per column its
 * nulls and the wrapping 64-bit sum of a value per row (integers and timestamps' epoch millis as they are, a DOUBLE's
 * IEEE bits, a STRING's String.hashCode()), which natslake's bench recomputes from its own read.
 */
public final class PaimonPk {

    private static final String[] EVENTS = {"click", "view", "buy", "cart", "login", "logout", "search", "share", "like", "comment"};

    public static void main(String[] args) throws Exception {
        JsonNode input = PaimonJson.MAPPER.readTree(System.in);
        String warehouse = input.get("warehouse").asText();
        Options options = new Options();
        options.set("warehouse", warehouse);
        options.set("cache-enabled", "false");
        PrintStream out = new PrintStream(System.out, false, "UTF-8");
        // An explicit Hadoop configuration: the default one is an HdfsConfiguration, and the HDFS client is not on the
        // oracle's classpath (the warehouse is local).
        org.apache.hadoop.conf.Configuration hadoopConf = new org.apache.hadoop.conf.Configuration();
        try (Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options, hadoopConf))) {
            for (JsonNode request : input.get("requests")) {
                ObjectNode result = PaimonJson.MAPPER.createObjectNode();
                try {
                    run(catalog, request, result);
                } catch (Exception | AssertionError e) {
                    // Reported in its own line, so the other requests still run in this JVM.
                    result.put("error", PaimonJson.chain(e));
                }
                out.println(PaimonJson.MAPPER.writeValueAsString(result));
                out.flush();
            }
        }
        out.flush();
    }

    private static void run(Catalog catalog, JsonNode request, ObjectNode result) throws Exception {
        String op = request.path("op").asText();
        switch (op) {
            case "read":
                read(catalog, request, result);
                return;
            case "stream":
                stream(catalog, request, result);
                return;
            case "write":
                write(catalog, request, result);
                return;
            case "create":
                create(catalog, request, result);
                return;
            case "bench-write":
                benchWrite(catalog, request, result);
                return;
            case "bench-read":
                benchRead(catalog, request, result);
                return;
            case "delete-rows":
                deleteRows(catalog, request, result);
                return;
            default:
                throw new IllegalArgumentException("unknown op '" + op + "' (read, stream, write, create, bench-write, bench-read, delete-rows)");
        }
    }

    private static FileStoreTable table(Catalog catalog, JsonNode request) throws Exception {
        return (FileStoreTable) catalog.getTable(Identifier.fromString(request.get("table").asText()));
    }

    /** The table's read builder, projected on `columns` when given; its output row type goes to `outType[0]`. */
    private static ReadBuilder readBuilder(Table table, JsonNode request, RowType[] outType) {
        ReadBuilder builder = table.newReadBuilder();
        RowType rowType = table.rowType();
        outType[0] = rowType;
        JsonNode columns = request.get("columns");
        if (columns != null && !columns.isNull()) {
            int[] projection = new int[columns.size()];
            for (int k = 0; k < projection.length; k++) {
                String name = columns.get(k).asText();
                projection[k] = rowType.getFieldNames().indexOf(name);
                if (projection[k] < 0) {
                    throw new IllegalArgumentException("no column " + name);
                }
            }
            builder = builder.withProjection(projection);
            outType[0] = rowType.project(projection);
        }
        return builder;
    }

    private static void read(Catalog catalog, JsonNode request, ObjectNode result) throws Exception {
        Table table = table(catalog, request);
        Map<String, String> dynamic = new HashMap<>();
        if (request.hasNonNull("snapshotId")) {
            dynamic.put("scan.snapshot-id", request.get("snapshotId").asText());
        }
        if (request.hasNonNull("tag")) {
            dynamic.put("scan.tag-name", request.get("tag").asText());
        }
        if (!dynamic.isEmpty()) {
            table = table.copy(dynamic);
        }
        RowType[] outType = new RowType[1];
        ReadBuilder builder = readBuilder(table, request, outType);
        List<Split> splits = builder.newScan().plan().splits();
        ArrayNode rows = PaimonJson.MAPPER.createArrayNode();
        TableRead read = builder.newRead();
        for (Split split : splits) {
            readSplit(read, split, row -> rows.add(PaimonJson.row(outType[0], row)));
        }
        result.set("snapshotIds", snapshotIds(splits));
        result.set("rows", rows);
    }

    private static void stream(Catalog catalog, JsonNode request, ObjectNode result) throws Exception {
        FileStoreTable base = table(catalog, request);
        Table table = base.copy(options(request));
        SnapshotManager snapshots = base.snapshotManager();
        RowType[] outType = new RowType[1];
        ReadBuilder builder = readBuilder(table, request, outType);
        StreamTableScan scan = builder.newStreamScan();
        TableRead read = builder.newRead();
        ArrayNode plans = result.putArray("plans");
        ArrayNode changes = result.putArray("changes");
        int maxPlans = request.path("maxPlans").asInt(10_000);
        for (int n = 0; n < maxPlans; n++) {
            List<Split> splits;
            try {
                splits = scan.plan().splits();
            } catch (EndOfScanException e) {
                break;
            }
            if (splits.isEmpty()) {
                // An empty plan: either the starting scanner only chose where to begin, or there is nothing new.
                Long next = scan.checkpoint();
                Long latest = snapshots.latestSnapshotId();
                if (next == null || latest == null || next > latest) {
                    break;
                }
                continue;
            }
            int before = changes.size();
            for (Split split : splits) {
                long snapshotId = ((DataSplit) split).snapshotId();
                readSplit(read, split, row -> {
                    ObjectNode change = changes.addObject();
                    change.put("snapshotId", snapshotId);
                    change.put("kind", row.getRowKind().shortString());
                    change.set("row", PaimonJson.row(outType[0], row));
                });
            }
            ObjectNode plan = plans.addObject();
            plan.set("snapshotIds", snapshotIds(splits));
            plan.put("rows", changes.size() - before);
        }
        Long next = scan.checkpoint();
        if (next == null) {
            result.putNull("nextSnapshotId");
        } else {
            result.put("nextSnapshotId", next);
        }
    }

    private interface RowSink {
        void accept(InternalRow row) throws Exception;
    }

    private static void readSplit(TableRead read, Split split, RowSink sink) throws Exception {
        try (RecordReader<InternalRow> reader = read.createReader(split)) {
            RecordReader.RecordIterator<InternalRow> batch;
            while ((batch = reader.readBatch()) != null) {
                InternalRow row;
                while ((row = batch.next()) != null) {
                    sink.accept(row);
                }
                batch.releaseBatch();
            }
        }
    }

    private static ArrayNode snapshotIds(List<Split> splits) {
        ArrayNode ids = PaimonJson.MAPPER.createArrayNode();
        splits.stream().filter(s -> s instanceof DataSplit).mapToLong(s -> ((DataSplit) s).snapshotId()).distinct().sorted().forEach(ids::add);
        return ids;
    }

    private static void write(Catalog catalog, JsonNode request, ObjectNode result) throws Exception {
        ArrayNode commits = result.putArray("commits");
        JsonNode batches = request.path("batches");
        for (int b = 0; b < batches.size(); b++) {
            // A fresh table per batch: a batch builder commits once, and each write restores from the latest snapshot.
            FileStoreTable table = table(catalog, request);
            RowType rowType = table.rowType();
            Long before = table.snapshotManager().latestSnapshotId();
            BatchWriteBuilder builder = table.newBatchWriteBuilder();
            try (BatchTableWrite write = builder.newWrite();
                    BatchTableCommit commit = builder.newCommit()) {
                // Lookup compaction (first-row tables, as Flink's writers run it) spills to local disk.
                write.withIOManager(IOManager.create(System.getProperty("java.io.tmpdir")));
                for (JsonNode change : batches.get(b)) {
                    GenericRow row = PaimonJson.parseRow(rowType, change.get("row"));
                    row.setRowKind(RowKind.fromShortString(change.path("kind").asText("+I")));
                    if (change.hasNonNull("bucket")) {
                        write.write(row, change.get("bucket").asInt());
                    } else {
                        write.write(row);
                    }
                }
                commit.commit(write.prepareCommit());
            }
            recordCommit(commits, table, before, b);
        }
        if (request.path("compact").asBoolean(false)) {
            FileStoreTable table = table(catalog, request);
            Long before = table.snapshotManager().latestSnapshotId();
            BatchWriteBuilder builder = table.newBatchWriteBuilder();
            try (BatchTableWrite write = builder.newWrite();
                    BatchTableCommit commit = builder.newCommit()) {
                write.withIOManager(IOManager.create(System.getProperty("java.io.tmpdir")));
                Map<String, Object[]> buckets = new LinkedHashMap<>();
                for (Split split : table.newReadBuilder().newScan().plan().splits()) {
                    DataSplit ds = (DataSplit) split;
                    buckets.put(ds.partition().toString() + "/" + ds.bucket(), new Object[] {ds.partition(), ds.bucket()});
                }
                for (Object[] pb : buckets.values()) {
                    write.compact((BinaryRow) pb[0], (Integer) pb[1], true);
                }
                commit.commit(write.prepareCommit());
            }
            recordCommit(commits, table, before, -1);
        }
    }

    /**
     * delete-rows: the deletion vectors Spark's DELETE writes into an append table with deletion-vectors.enabled
     * (PaimonSparkWriter.persistDeletionVectors): the given row positions of data files of the latest snapshot are
     * marked deleted ("*": in every file, below its row count) — merged into a file's vector when it has one —
     * through BaseAppendDeleteFileMaintainer (per partition without buckets, per bucket with them), and the new index
     * files are committed in one commit.
     */
    private static void deleteRows(Catalog catalog, JsonNode request, ObjectNode result) throws Exception {
        FileStoreTable table = table(catalog, request);
        Snapshot snapshot = table.snapshotManager().latestSnapshot();
        Map<String, DataSplit> splitOf = new LinkedHashMap<>();
        Map<String, Long> rowsOf = new HashMap<>();
        for (Split split : table.newReadBuilder().newScan().plan().splits()) {
            DataSplit ds = (DataSplit) split;
            for (DataFileMeta f : ds.dataFiles()) {
                splitOf.put(f.fileName(), ds);
                rowsOf.put(f.fileName(), f.rowCount());
            }
        }
        // "*": the same positions in every data file (those below its row count).
        Map<String, JsonNode> positions = new LinkedHashMap<>();
        Iterator<Map.Entry<String, JsonNode>> given = request.get("positions").fields();
        while (given.hasNext()) {
            Map.Entry<String, JsonNode> e = given.next();
            if (e.getKey().equals("*")) {
                for (String name : splitOf.keySet()) {
                    positions.put(name, e.getValue());
                }
            } else {
                positions.put(e.getKey(), e.getValue());
            }
        }
        IndexFileHandler handler = table.store().newIndexFileHandler();
        boolean unaware = table.coreOptions().bucket() == -1;
        boolean bitmap64 = table.coreOptions().deletionVectorBitmap64();
        Map<String, BaseAppendDeleteFileMaintainer> maintainers = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> file : positions.entrySet()) {
            DataSplit ds = splitOf.get(file.getKey());
            if (ds == null) {
                throw new IllegalArgumentException("no data file " + file.getKey() + " in the latest snapshot");
            }
            BaseAppendDeleteFileMaintainer maintainer =
                    maintainers.computeIfAbsent(
                            ds.partition().toString() + "/" + ds.bucket(),
                            k -> unaware
                                    ? BaseAppendDeleteFileMaintainer.forUnawareAppend(handler, snapshot, ds.partition())
                                    : BaseAppendDeleteFileMaintainer.forBucketedAppend(handler, snapshot, ds.partition(), ds.bucket()));
            DeletionVector dv = bitmap64 ? new Bitmap64DeletionVector() : new BitmapDeletionVector();
            for (JsonNode position : file.getValue()) {
                if (position.asLong() < rowsOf.get(file.getKey())) {
                    dv.delete(position.asLong());
                }
            }
            maintainer.notifyNewDeletionVector(file.getKey(), dv);
        }
        List<CommitMessage> messages = new ArrayList<>();
        for (BaseAppendDeleteFileMaintainer maintainer : maintainers.values()) {
            List<IndexFileMeta> added = new ArrayList<>();
            List<IndexFileMeta> deleted = new ArrayList<>();
            for (IndexManifestEntry entry : maintainer.persist()) {
                (entry.kind() == FileKind.ADD ? added : deleted).add(entry.indexFile());
            }
            messages.add(
                    new CommitMessageImpl(
                            maintainer.getPartition(),
                            maintainer.getBucket(),
                            null,
                            new DataIncrement(new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), added, deleted),
                            CompactIncrement.emptyIncrement()));
        }
        Long before = table.snapshotManager().latestSnapshotId();
        try (BatchTableCommit commit = table.newBatchWriteBuilder().newCommit()) {
            commit.commit(messages);
        }
        recordCommit(result.putArray("commits"), table, before, 0);
    }

    /** The snapshots a commit made (after `before`), under its batch index (-1: the compaction). */
    private static void recordCommit(ArrayNode commits, FileStoreTable table, Long before, int batch) {
        SnapshotManager snapshots = table.snapshotManager();
        Long after = snapshots.latestSnapshotId();
        ObjectNode c = commits.addObject();
        if (batch >= 0) {
            c.put("batch", batch);
        } else {
            c.put("batch", "compact");
        }
        ArrayNode made = c.putArray("snapshots");
        for (long id = before == null ? 1 : before + 1; after != null && id <= after; id++) {
            Snapshot s = snapshots.snapshot(id);
            made.addObject().put("id", id).put("commitKind", s.commitKind().name());
        }
    }

    private static void create(Catalog catalog, JsonNode request, ObjectNode result) throws Exception {
        Identifier id = Identifier.fromString(request.get("table").asText());
        Schema.Builder schema = Schema.newBuilder();
        for (JsonNode f : request.get("fields")) {
            schema.column(f.get("name").asText(), DataTypeJsonParser.parseDataType(f.get("type")));
        }
        schema.partitionKeys(strings(request.path("partitionKeys")));
        schema.primaryKey(strings(request.path("primaryKeys")));
        schema.options(options(request));
        catalog.createDatabase(id.getDatabaseName(), true);
        catalog.createTable(id, schema.build(), false);
        // Loading the table runs Java's validation of a stored schema again (what every later reader does).
        FileStoreTable table = (FileStoreTable) catalog.getTable(id);
        result.set("schema", PaimonJson.MAPPER.readTree(table.schema().toString()));
    }

    /** The request's "options" object as table options (values as text). */
    private static Map<String, String> options(JsonNode request) {
        Map<String, String> out = new LinkedHashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = request.path("options").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            out.put(e.getKey(), e.getValue().asText());
        }
        return out;
    }

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        for (JsonNode n : array) {
            out.add(n.asText());
        }
        return out;
    }

    private static void benchWrite(Catalog catalog, JsonNode request, ObjectNode result) throws Exception {
        int rows = request.path("rows").asInt(1_000_000);
        int warmupRows = request.path("warmupRows").asInt(rows);
        int buckets = request.path("buckets").asInt(4);
        boolean sparse = request.path("sparseUpdates").asBoolean(false);
        Identifier measured = Identifier.fromString(request.path("table").asText("bench.measured"));
        Map<String, String> options = new LinkedHashMap<>();
        options.put("bucket", Integer.toString(buckets));
        options.putAll(options(request));
        catalog.createDatabase("bench", true);
        if (warmupRows > 0) {
            benchRun(catalog, Identifier.create("bench", "warmup"), options, benchRows(warmupRows, sparse));
        }
        catalog.createDatabase(measured.getDatabaseName(), true);
        GenericRow[] data = benchRows(rows, sparse);
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        com.sun.management.OperatingSystemMXBean os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        long gc0 = gcMillis();
        long cpu0 = threads.getCurrentThreadCpuTime();
        long proc0 = os.getProcessCpuTime();
        long t0 = System.nanoTime();
        FileStoreTable table = benchRun(catalog, measured, options, data);
        long wallNanos = System.nanoTime() - t0;
        long threadCpuNanos = threads.getCurrentThreadCpuTime() - cpu0;
        long processCpuNanos = os.getProcessCpuTime() - proc0;
        long gcMillis = gcMillis() - gc0;
        Snapshot snapshot = table.snapshotManager().latestSnapshot();
        result.put("rows", rows);
        result.put("keys", java.util.Arrays.stream(data).mapToLong(r -> r.getLong(0)).distinct().count());
        result.put("buckets", buckets);
        result.put("warmupRows", warmupRows);
        result.put("wallMs", wallNanos / 1e6);
        result.put("rowsPerSec", rows / (wallNanos / 1e9));
        result.put("threadCpuMs", threadCpuNanos / 1e6);
        result.put("processCpuMs", processCpuNanos / 1e6);
        result.put("gcMs", gcMillis);
        result.put("snapshotId", snapshot.id());
        result.put("commitKind", snapshot.commitKind().name());
        result.put("rowCount", snapshot.totalRecordCount());
        result.put("files", table.newReadBuilder().newScan().plan().splits().stream().mapToInt(s -> ((DataSplit) s).dataFiles().size()).sum());
        result.set("options", PaimonJson.MAPPER.valueToTree(table.options()));
        result.put("jvm", System.getProperty("java.vm.name") + " " + System.getProperty("java.version"));
        result.put("maxHeapMb", Runtime.getRuntime().maxMemory() / (1 << 20));
        result.put("inputArguments", String.join(" ", ManagementFactory.getRuntimeMXBean().getInputArguments()));
    }

    private static void benchRead(Catalog catalog, JsonNode request, ObjectNode result) throws Exception {
        FileStoreTable table = table(catalog, request);
        int reads = request.path("reads").asInt(5);
        int warmupReads = Math.max(1, request.path("warmupReads").asInt(1));
        RowType rowType = table.rowType();
        long[] sums = new long[rowType.getFieldCount()];
        long[] nulls = new long[rowType.getFieldCount()];
        long rows = benchReadOnce(table, row -> {
            for (int f = 0; f < sums.length; f++) {
                if (row.isNullAt(f)) {
                    nulls[f]++;
                } else {
                    sums[f] += checksumValue(rowType.getTypeAt(f), row, f);
                }
            }
        });
        for (int w = 1; w < warmupReads; w++) {
            benchReadOnce(table, row -> {});
        }
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        com.sun.management.OperatingSystemMXBean os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        ArrayNode readMs = result.putArray("readMs");
        long gc0 = gcMillis();
        long cpu0 = threads.getCurrentThreadCpuTime();
        long proc0 = os.getProcessCpuTime();
        long t0 = System.nanoTime();
        for (int r = 0; r < reads; r++) {
            long r0 = System.nanoTime();
            long got = benchReadOnce(table, row -> {});
            readMs.add((System.nanoTime() - r0) / 1e6);
            if (got != rows) {
                throw new IllegalStateException("read " + r + " gave " + got + " rows, the first " + rows);
            }
        }
        long wallNanos = System.nanoTime() - t0;
        result.put("rows", rows);
        result.put("reads", reads);
        result.put("warmupReads", warmupReads);
        result.put("wallMs", wallNanos / 1e6);
        result.put("rowsPerSec", rows * (double) reads / (wallNanos / 1e9));
        result.put("threadCpuMs", (threads.getCurrentThreadCpuTime() - cpu0) / 1e6);
        result.put("processCpuMs", (os.getProcessCpuTime() - proc0) / 1e6);
        result.put("gcMs", gcMillis() - gc0);
        ObjectNode checksum = result.putObject("checksum");
        for (int f = 0; f < sums.length; f++) {
            ObjectNode column = checksum.putObject(rowType.getFieldNames().get(f));
            column.put("nulls", nulls[f]);
            column.put("sum", Long.toString(sums[f]));
        }
        result.put("splits", table.newReadBuilder().newScan().plan().splits().size());
        result.put("jvm", System.getProperty("java.vm.name") + " " + System.getProperty("java.version"));
    }

    /** One full batch read of the table's latest snapshot, every row handed to `sink`; the rows read. */
    private static long benchReadOnce(Table table, RowSink sink) throws Exception {
        ReadBuilder builder = table.newReadBuilder();
        TableRead read = builder.newRead();
        long[] rows = {0};
        for (Split split : builder.newScan().plan().splits()) {
            readSplit(read, split, row -> {
                rows[0]++;
                sink.accept(row);
            });
        }
        return rows[0];
    }

    /** A non-null value's contribution to bench-read's checksum (see the class comment). */
    private static long checksumValue(org.apache.paimon.types.DataType type, InternalRow row, int f) {
        switch (type.getTypeRoot()) {
            case BIGINT:
                return row.getLong(f);
            case INTEGER:
                return row.getInt(f);
            case DOUBLE:
                return Double.doubleToLongBits(row.getDouble(f));
            case TIMESTAMP_WITHOUT_TIME_ZONE:
                return row.getTimestamp(f, ((org.apache.paimon.types.TimestampType) type).getPrecision()).getMillisecond();
            case VARCHAR:
            case CHAR:
                return row.getString(f).toString().hashCode();
            default:
                throw new IllegalArgumentException("bench-read has no checksum for " + type);
        }
    }

    private static long gcMillis() {
        long total = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            total += Math.max(0, gc.getCollectionTime());
        }
        return total;
    }

    private static FileStoreTable benchRun(Catalog catalog, Identifier id, Map<String, String> options, GenericRow[] data) throws Exception {
        Schema schema =
                Schema.newBuilder()
                        .column("id", DataTypes.BIGINT().notNull())
                        .column("ts", DataTypes.TIMESTAMP(3))
                        .column("user", DataTypes.STRING())
                        .column("event", DataTypes.STRING())
                        .column("amount", DataTypes.DOUBLE())
                        .column("qty", DataTypes.INT())
                        .primaryKey("id")
                        .options(options)
                        .build();
        catalog.dropTable(id, true);
        catalog.createTable(id, schema, false);
        FileStoreTable table = (FileStoreTable) catalog.getTable(id);
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        try (BatchTableWrite write = builder.newWrite();
                BatchTableCommit commit = builder.newCommit()) {
            if (table.coreOptions().needLookup()) {
                // A lookup table (first-row, changelog-producer = lookup) compacts with lookups that spill to disk.
                write.withIOManager(IOManager.create(System.getProperty("java.io.tmpdir")));
            }
            for (GenericRow row : data) {
                write.write(row);
            }
            commit.commit(write.prepareCommit());
        }
        return table;
    }

    /** The benchmark's rows (see the class comment); bench/shape.ts `benchUpsertRow` is the same function. */
    private static GenericRow[] benchRows(int n, boolean sparse) {
        GenericRow[] out = new GenericRow[n];
        for (int i = 0; i < n; i++) {
            long id = i;
            if (i % 10 == 9) {
                long h = Integer.toUnsignedLong(i * 0x9E3779B1) % i; // bench/shape.ts: Math.imul(i, 0x9e3779b1) >>> 0
                id = h % 10 == 9 ? h - 1 : h;
            }
            String user = String.format("user-%06d", (i * 7919L) % 100000);
            boolean blank = sparse && i % 10 == 9;
            out[i] =
                    GenericRow.of(
                            id,
                            Timestamp.fromEpochMillis(1700000000000L + i),
                            BinaryString.fromString(user),
                            blank ? null : BinaryString.fromString(EVENTS[i % 10]),
                            (i % 1000) * 0.25,
                            blank ? null : i % 100);
        }
        return out;
    }

    private PaimonPk() {}
}
