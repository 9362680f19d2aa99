import org.apache.paimon.compact.CompactResult;
import org.apache.paimon.compact.CompactUnit;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.manifest.FileSource;
import org.apache.paimon.mergetree.LevelSortedRun;
import org.apache.paimon.mergetree.Levels;
import org.apache.paimon.mergetree.SortedRun;
import org.apache.paimon.mergetree.compact.AbstractCompactRewriter;
import org.apache.paimon.mergetree.compact.CompactStrategy;
import org.apache.paimon.mergetree.compact.EarlyFullCompaction;
import org.apache.paimon.mergetree.compact.ForceUpLevel0Compaction;
import org.apache.paimon.mergetree.compact.MergeTreeCompactManager;
import org.apache.paimon.mergetree.compact.OffPeakHours;
import org.apache.paimon.mergetree.compact.UniversalCompaction;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.stats.SimpleStats;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicReference;

/**
 * natslake's oracle for primary-key compaction planning: Java Paimon's own UniversalCompaction,
 * ForceUpLevel0Compaction, EarlyFullCompaction, Levels, MergeTreeCompactManager and MergeTreeCompactTask (paimon-bundle
 * 1.4.2) on scenarios read from stdin as one JSON document, one JSON line printed per scenario.
 *
 * <pre>
 * java -cp lib/*:classes LsmCompactionOracle &lt; scenarios.json
 * {"picks": [PICK...], "buckets": [BUCKET...]}
 *   PICK:   {"trigger", "amp", "ratio", "offPeakRatio", "mode": universal|force-up|gentle, "interval", "numLevels",
 *            "calls", "runs": [[level, size]...]}
 *           → {"picks": [null | {"outputLevel", "runs"}]}, one per call on the same strategy
 *   BUCKET: the PICK options plus "stopTrigger", "minFileSize", "targetSize", "forceRewrite", "totalSizeThreshold",
 *            "incrementalSizeThreshold" (null: off), "initial": [FILE...], "newFiles": [FILE...]
 *   FILE:   {"name", "level", "min", "max", "size", "minSeq", "maxSeq", "deletes" (null: unknown)}
 *           → {"rounds": [ROUND...]}, one per new file: added to level 0, then one compaction, waited for
 *   ROUND:  {"pick": null | {"outputLevel", "files": [names]}, "compacted", "steps": [{"upgrade": name} |
 *            {"rewrite": [[[names]]], "dropDelete"}], "runs": [[level, [names]]...], "waitForLatest",
 *            "waitForCheckpoint"}
 * </pre>
 *
 * Off-peak hours are 0–24 when offPeakRatio > 0 (always off-peak, so the wall clock does not matter). A rewrite is
 * carried out by a synthetic rewriter that natslake's test helper (test/helpers/lsm-files.ts) mirrors: its inputs
 * become ceil(size / targetSize) files (at most one per key) splitting the union of their key ranges, named c0, c1, …
 */
public final class LsmCompactionOracle {

    private static final Comparator<InternalRow> KEYS = Comparator.comparingInt(r -> r.getInt(0));

    public static void main(String[] args) throws Exception {
        JsonNode input = new ObjectMapper().readTree(System.in);
        PrintStream out = new PrintStream(System.out, false, "UTF-8");
        for (JsonNode pick : input.path("picks")) {
            out.println(pick(pick));
        }
        ExecutorService executor = Executors.newSingleThreadExecutor();
        try {
            for (JsonNode bucket : input.path("buckets")) {
                out.println(bucket(bucket, executor));
            }
        } finally {
            executor.shutdownNow();
        }
        out.flush();
    }

    private static CompactStrategy strategy(JsonNode s) {
        EarlyFullCompaction early = null;
        Long total = optLong(s, "totalSizeThreshold");
        Long incremental = optLong(s, "incrementalSizeThreshold");
        if (total != null || incremental != null) {
            early = new EarlyFullCompaction(null, total, incremental);
        }
        int offPeakRatio = s.path("offPeakRatio").asInt(0);
        OffPeakHours offPeak = offPeakRatio > 0 ? OffPeakHours.create(0, 24, offPeakRatio) : null;
        UniversalCompaction universal =
                new UniversalCompaction(
                        s.get("amp").asInt(), s.get("ratio").asInt(), s.get("trigger").asInt(), early, offPeak);
        switch (s.get("mode").asText()) {
            case "universal":
                return universal;
            case "force-up":
                return new ForceUpLevel0Compaction(universal, null);
            case "gentle":
                return new ForceUpLevel0Compaction(universal, s.get("interval").asInt());
            default:
                throw new IllegalArgumentException("unknown mode " + s.get("mode"));
        }
    }

    private static Long optLong(JsonNode s, String field) {
        JsonNode v = s.get(field);
        return v == null || v.isNull() ? null : v.asLong();
    }

    private static String pick(JsonNode s) {
        CompactStrategy strategy = strategy(s);
        List<LevelSortedRun> runs = new ArrayList<>();
        int n = 0;
        for (JsonNode r : s.get("runs")) {
            DataFileMeta file = file("r" + n++, r.get(0).asInt(), 0, 0, r.get(1).asLong(), 0, 0, 0L);
            runs.add(new LevelSortedRun(r.get(0).asInt(), SortedRun.fromSingle(file)));
        }
        StringBuilder sb = new StringBuilder("{\"picks\":[");
        int calls = s.path("calls").asInt(1);
        for (int c = 0; c < calls; c++) {
            Optional<CompactUnit> unit = strategy.pick(s.get("numLevels").asInt(), runs);
            sb.append(c == 0 ? "" : ",");
            if (unit.isPresent()) {
                sb.append("{\"outputLevel\":").append(unit.get().outputLevel());
                sb.append(",\"runs\":").append(unit.get().files().size()).append('}');
            } else {
                sb.append("null");
            }
        }
        return sb.append("]}").toString();
    }

    private static String bucket(JsonNode s, ExecutorService executor) throws Exception {
        CompactStrategy real = strategy(s);
        AtomicReference<Optional<CompactUnit>> lastPick = new AtomicReference<>();
        CompactStrategy recording =
                (numLevels, runs) -> {
                    lastPick.set(real.pick(numLevels, runs));
                    return lastPick.get();
                };
        List<DataFileMeta> initial = new ArrayList<>();
        for (JsonNode f : s.path("initial")) {
            initial.add(file(f));
        }
        Levels levels = new Levels(KEYS, initial, s.get("numLevels").asInt());
        RecordingRewriter rewriter = new RecordingRewriter(s.get("targetSize").asLong());
        MergeTreeCompactManager manager =
                new MergeTreeCompactManager(
                        executor,
                        levels,
                        recording,
                        KEYS,
                        s.get("minFileSize").asLong(),
                        s.get("stopTrigger").asInt(),
                        rewriter,
                        null,
                        null,
                        false,
                        false,
                        null,
                        s.get("forceRewrite").asBoolean(),
                        false);
        StringBuilder sb = new StringBuilder("{\"rounds\":[");
        boolean firstRound = true;
        for (JsonNode f : s.get("newFiles")) {
            manager.addNewFile(file(f));
            lastPick.set(null);
            rewriter.steps.setLength(0);
            manager.triggerCompaction(false);
            Optional<CompactResult> result = manager.getCompactionResult(true);
            sb.append(firstRound ? "" : ",");
            firstRound = false;
            sb.append("{\"pick\":");
            if (lastPick.get() != null && lastPick.get().isPresent()) {
                CompactUnit unit = lastPick.get().get();
                sb.append("{\"outputLevel\":").append(unit.outputLevel()).append(",\"files\":");
                names(sb, unit.files());
                sb.append('}');
            } else {
                sb.append("null");
            }
            sb.append(",\"compacted\":").append(result.isPresent());
            sb.append(",\"steps\":[").append(rewriter.steps).append(']');
            sb.append(",\"runs\":[");
            boolean firstRun = true;
            for (LevelSortedRun run : levels.levelSortedRuns()) {
                sb.append(firstRun ? "" : ",").append('[').append(run.level()).append(',');
                firstRun = false;
                names(sb, run.run().files());
                sb.append(']');
            }
            sb.append("],\"waitForLatest\":").append(manager.shouldWaitForLatestCompaction());
            sb.append(",\"waitForCheckpoint\":").append(manager.shouldWaitForPreparingCheckpoint());
            sb.append('}');
        }
        manager.close();
        return sb.append("]}").toString();
    }

    private static void names(StringBuilder sb, List<DataFileMeta> files) {
        sb.append('[');
        for (int i = 0; i < files.size(); i++) {
            sb.append(i == 0 ? "" : ",").append('"').append(files.get(i).fileName()).append('"');
        }
        sb.append(']');
    }

    private static DataFileMeta file(JsonNode f) {
        JsonNode deletes = f.get("deletes");
        return file(
                f.get("name").asText(),
                f.get("level").asInt(),
                f.get("min").asInt(),
                f.get("max").asInt(),
                f.get("size").asLong(),
                f.get("minSeq").asLong(),
                f.get("maxSeq").asLong(),
                deletes == null || deletes.isNull() ? null : deletes.asLong());
    }

    private static DataFileMeta file(String name, int level, int min, int max, long size, long minSeq, long maxSeq, Long deletes) {
        return DataFileMeta.create(
                name,
                size,
                Math.max(1, max - min + 1),
                BinaryRow.singleColumn(min),
                BinaryRow.singleColumn(max),
                SimpleStats.EMPTY_STATS,
                SimpleStats.EMPTY_STATS,
                minSeq,
                maxSeq,
                0L,
                level,
                Collections.emptyList(),
                Timestamp.fromEpochMillis(0),
                deletes,
                null,
                FileSource.APPEND,
                null,
                null,
                null,
                null);
    }

    /** Records the compact task's calls and carries them out synthetically (see the class comment). */
    private static final class RecordingRewriter extends AbstractCompactRewriter {

        private final long targetSize;
        private final StringBuilder steps = new StringBuilder();
        private int counter = 0;

        private RecordingRewriter(long targetSize) {
            this.targetSize = targetSize;
        }

        @Override
        public CompactResult rewrite(int outputLevel, boolean dropDelete, List<List<SortedRun>> sections) {
            steps.append(steps.length() == 0 ? "" : ",").append("{\"rewrite\":[");
            List<DataFileMeta> inputs = new ArrayList<>();
            for (int s = 0; s < sections.size(); s++) {
                steps.append(s == 0 ? "" : ",").append('[');
                List<SortedRun> section = sections.get(s);
                for (int r = 0; r < section.size(); r++) {
                    steps.append(r == 0 ? "" : ",");
                    names(steps, section.get(r).files());
                    inputs.addAll(section.get(r).files());
                }
                steps.append(']');
            }
            steps.append("],\"dropDelete\":").append(dropDelete).append('}');

            int lo = Integer.MAX_VALUE;
            int hi = Integer.MIN_VALUE;
            long size = 0;
            long minSeq = inputs.get(0).minSequenceNumber();
            long maxSeq = inputs.get(0).maxSequenceNumber();
            Long deletes = 0L;
            for (DataFileMeta f : inputs) {
                lo = Math.min(lo, f.minKey().getInt(0));
                hi = Math.max(hi, f.maxKey().getInt(0));
                size += f.fileSize();
                minSeq = Math.min(minSeq, f.minSequenceNumber());
                maxSeq = Math.max(maxSeq, f.maxSequenceNumber());
                deletes = deletes == null || f.deleteRowCount().orElse(null) == null ? null : deletes + f.deleteRowCount().get();
            }
            long width = (long) hi - lo + 1;
            long n = Math.min(Math.max(1, (size + targetSize - 1) / targetSize), width);
            List<DataFileMeta> after = new ArrayList<>();
            for (long i = 0; i < n; i++) {
                int min = (int) (lo + (i * width) / n);
                int max = (int) (lo + ((i + 1) * width) / n - 1);
                long pieceSize = i == n - 1 ? size - (size / n) * (n - 1) : size / n;
                Long pieceDeletes = dropDelete ? Long.valueOf(0L) : deletes == null ? null : i == 0 ? deletes : Long.valueOf(0L);
                after.add(file("c" + counter++, outputLevel, min, max, pieceSize, minSeq, maxSeq, pieceDeletes));
            }
            return new CompactResult(inputs, after);
        }

        @Override
        public CompactResult upgrade(int outputLevel, DataFileMeta file) throws Exception {
            steps.append(steps.length() == 0 ? "" : ",").append("{\"upgrade\":\"").append(file.fileName()).append("\"}");
            return super.upgrade(outputLevel, file);
        }
    }
}
