import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.options.Options;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.predicate.PredicateBuilder;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.MultisetType;
import org.apache.paimon.types.RowType;

import java.io.PrintStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * natslake's Java Paimon test oracle: reads tables of a local filesystem warehouse through Paimon's Java API and
 * prints one JSON line per table read, so one JVM start serves several tables.
 *
 * <pre>
 * java -cp lib/*:classes PaimonRead WAREHOUSE REQUEST...
 *   REQUEST: db.table[;snapshot=N|;tag=NAME|;at=EPOCH_MS][;columns=a,b][;filter=FIELD,OP,LITERAL]
 *   OP: gt, ge, lt, le, eq
 * </pre>
 *
 * <p>Time travel goes through Table.copy with Paimon's own options (snapshot: scan.snapshot-id, tag: scan.tag-name,
 * at: scan.timestamp-millis), so the table read — its columns, and the names the projection and the filter use — is
 * the one Paimon's time travel gives: the chosen snapshot's schema.
 *
 * A filter goes through ReadBuilder.withFilter (file and row-group pruning by statistics) and
 * TableRead.executeFilter (then rows are tested with Paimon's own comparator), so the result is exactly what Java
 * Paimon returns for that predicate. Output per request: {"table":..,"fields":[{"name":..,"type": Paimon's SQL type}],
 * "rows":[{column: value}]} (fields: the columns read, in order). Values: BIGINT and
 * DECIMAL as strings (exact); FLOAT/DOUBLE as numbers, or "NaN", "Infinity", "-Infinity", "-0.0"; bytes as hex;
 * DATE as days; TIME as millis of the day; TIMESTAMP(_LTZ) as epoch nanoseconds (a string); ARRAY as a list; MAP
 * and MULTISET as a list of [key, value]; ROW as an object. A request that fails prints
 * {"table":..,"error":"exception chain"} instead; any other failure: a stack trace on stderr and exit 1.
 */
public final class PaimonRead {

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: PaimonRead WAREHOUSE db.table[;snapshot=N|;tag=NAME|;at=EPOCH_MS][;columns=a,b][;filter=f,op,literal]...");
            System.exit(2);
        }
        Options options = new Options();
        options.set("warehouse", args[0]);
        PrintStream out = new PrintStream(System.out, false, "UTF-8");
        // An explicit Hadoop configuration: the default one is an HdfsConfiguration, and the HDFS client is not on
        // the oracle's classpath (the warehouse is local).
        org.apache.hadoop.conf.Configuration hadoopConf = new org.apache.hadoop.conf.Configuration();
        try (Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options, hadoopConf))) {
            for (int i = 1; i < args.length; i++) {
                // A request that fails is reported in its own line, so the others still run in this JVM.
                String line;
                try {
                    line = read(catalog, args[i]);
                } catch (Exception e) {
                    StringBuilder msg = new StringBuilder();
                    for (Throwable t = e; t != null; t = t.getCause()) {
                        msg.append(msg.length() == 0 ? "" : "\ncaused by: ").append(t);
                    }
                    line = "{\"table\":" + str(args[i]) + ",\"error\":" + str(msg.toString()) + "}";
                }
                out.println(line);
            }
        }
        out.flush();
    }

    private static String read(Catalog catalog, String request) throws Exception {
        String[] parts = request.split(";");
        Table table = catalog.getTable(Identifier.fromString(parts[0]));
        // Time travel first: the projection and the filter name the travelled-to table's columns.
        for (int p = 1; p < parts.length; p++) {
            String option = timeTravelOption(parts[p]);
            if (option != null) {
                String value = parts[p].substring(parts[p].indexOf('=') + 1);
                table = table.copy(java.util.Collections.singletonMap(option, value));
            }
        }
        RowType rowType = table.rowType();
        ReadBuilder builder = table.newReadBuilder();
        RowType outType = rowType;
        boolean filtered = false;
        for (int p = 1; p < parts.length; p++) {
            String part = parts[p];
            if (timeTravelOption(part) != null) {
                continue;
            } else if (part.startsWith("filter=")) {
                builder = builder.withFilter(predicate(rowType, part.substring("filter=".length())));
                filtered = true;
            } else if (part.startsWith("columns=")) {
                String[] names = part.substring("columns=".length()).split(",");
                int[] projection = new int[names.length];
                for (int k = 0; k < names.length; k++) {
                    projection[k] = indexOf(rowType, names[k]);
                }
                builder = builder.withProjection(projection);
                outType = rowType.project(projection);
            } else {
                throw new IllegalArgumentException("unknown request part: " + part);
            }
        }
        org.apache.paimon.table.source.TableRead read = builder.newRead();
        if (filtered) {
            read = read.executeFilter();
        }
        StringBuilder sb = new StringBuilder();
        List<DataField> fields = outType.getFields();
        sb.append("{\"table\":").append(str(parts[0])).append(",\"fields\":[");
        for (int k = 0; k < fields.size(); k++) {
            sb.append(k > 0 ? "," : "").append("{\"name\":").append(str(fields.get(k).name()));
            sb.append(",\"type\":").append(str(fields.get(k).type().asSQLString())).append('}');
        }
        sb.append("],\"rows\":[");
        List<InternalRow.FieldGetter> getters = new ArrayList<>();
        for (int k = 0; k < fields.size(); k++) {
            getters.add(InternalRow.createFieldGetter(fields.get(k).type(), k));
        }
        boolean first = true;
        try (RecordReader<InternalRow> reader = read.createReader(builder.newScan().plan().splits())) {
            RecordReader.RecordIterator<InternalRow> batch;
            while ((batch = reader.readBatch()) != null) {
                InternalRow row;
                while ((row = batch.next()) != null) {
                    if (!first) {
                        sb.append(',');
                    }
                    first = false;
                    sb.append('{');
                    for (int k = 0; k < fields.size(); k++) {
                        if (k > 0) {
                            sb.append(',');
                        }
                        sb.append(str(fields.get(k).name())).append(':');
                        value(sb, fields.get(k).type(), getters.get(k).getFieldOrNull(row));
                    }
                    sb.append('}');
                }
                batch.releaseBatch();
            }
        }
        return sb.append("]}").toString();
    }

    /** Paimon's option for a time-travel request part (snapshot=, tag=, at=), or null for another part. */
    private static String timeTravelOption(String part) {
        if (part.startsWith("snapshot=")) {
            return "scan.snapshot-id";
        } else if (part.startsWith("tag=")) {
            return "scan.tag-name";
        } else if (part.startsWith("at=")) {
            return "scan.timestamp-millis";
        }
        return null;
    }

    private static int indexOf(RowType rowType, String name) {
        int index = rowType.getFieldNames().indexOf(name);
        if (index < 0) {
            throw new IllegalArgumentException("no column " + name);
        }
        return index;
    }

    private static Predicate predicate(RowType rowType, String spec) {
        String[] p = spec.split(",", 3);
        int index = indexOf(rowType, p[0]);
        Object literal = literal(rowType.getTypeAt(index), p[2]);
        PredicateBuilder b = new PredicateBuilder(rowType);
        switch (p[1]) {
            case "gt":
                return b.greaterThan(index, literal);
            case "ge":
                return b.greaterOrEqual(index, literal);
            case "lt":
                return b.lessThan(index, literal);
            case "le":
                return b.lessOrEqual(index, literal);
            case "eq":
                return b.equal(index, literal);
            default:
                throw new IllegalArgumentException("unknown operator " + p[1]);
        }
    }

    /** A literal in Paimon's internal representation of the column's type. */
    private static Object literal(DataType type, String text) {
        switch (type.getTypeRoot()) {
            case TINYINT:
                return Byte.parseByte(text);
            case SMALLINT:
                return Short.parseShort(text);
            case INTEGER:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE:
                return Integer.parseInt(text);
            case BIGINT:
                return Long.parseLong(text);
            case FLOAT:
                return Float.parseFloat(text);
            case DOUBLE:
                return Double.parseDouble(text);
            case CHAR:
            case VARCHAR:
                return BinaryString.fromString(text);
            default:
                throw new IllegalArgumentException("no literal support for " + type);
        }
    }

    private static void value(StringBuilder sb, DataType type, Object v) {
        if (v == null) {
            sb.append("null");
            return;
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
            case TINYINT:
            case SMALLINT:
            case INTEGER:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE:
                sb.append(v);
                return;
            case BIGINT:
                sb.append('"').append(v).append('"');
                return;
            case FLOAT:
                number(sb, ((Float) v).doubleValue());
                return;
            case DOUBLE:
                number(sb, (Double) v);
                return;
            case DECIMAL:
                sb.append('"').append(((Decimal) v).toBigDecimal().toPlainString()).append('"');
                return;
            case CHAR:
            case VARCHAR:
                sb.append(str(v.toString()));
                return;
            case BINARY:
            case VARBINARY:
                sb.append('"');
                for (byte x : (byte[]) v) {
                    sb.append(String.format("%02x", x & 0xff));
                }
                sb.append('"');
                return;
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                Timestamp ts = (Timestamp) v;
                BigInteger nanos = BigInteger.valueOf(ts.getMillisecond()).multiply(BigInteger.valueOf(1_000_000)).add(BigInteger.valueOf(ts.getNanoOfMillisecond()));
                sb.append('"').append(nanos).append('"');
                return;
            case ARRAY:
                array(sb, ((ArrayType) type).getElementType(), (InternalArray) v);
                return;
            case MAP:
                map(sb, ((MapType) type).getKeyType(), ((MapType) type).getValueType(), (InternalMap) v);
                return;
            case MULTISET:
                map(sb, ((MultisetType) type).getElementType(), new org.apache.paimon.types.IntType(false), (InternalMap) v);
                return;
            case ROW:
                RowType rowType = (RowType) type;
                InternalRow row = (InternalRow) v;
                sb.append('{');
                for (int k = 0; k < rowType.getFieldCount(); k++) {
                    if (k > 0) {
                        sb.append(',');
                    }
                    DataField f = rowType.getFields().get(k);
                    sb.append(str(f.name())).append(':');
                    value(sb, f.type(), InternalRow.createFieldGetter(f.type(), k).getFieldOrNull(row));
                }
                sb.append('}');
                return;
            default:
                throw new IllegalArgumentException("no JSON rendering for " + type);
        }
    }

    private static void array(StringBuilder sb, DataType elementType, InternalArray a) {
        InternalArray.ElementGetter getter = InternalArray.createElementGetter(elementType);
        sb.append('[');
        for (int k = 0; k < a.size(); k++) {
            if (k > 0) {
                sb.append(',');
            }
            value(sb, elementType, getter.getElementOrNull(a, k));
        }
        sb.append(']');
    }

    private static void map(StringBuilder sb, DataType keyType, DataType valueType, InternalMap m) {
        InternalArray keys = m.keyArray();
        InternalArray values = m.valueArray();
        InternalArray.ElementGetter kg = InternalArray.createElementGetter(keyType);
        InternalArray.ElementGetter vg = InternalArray.createElementGetter(valueType);
        sb.append('[');
        for (int k = 0; k < m.size(); k++) {
            if (k > 0) {
                sb.append(',');
            }
            sb.append('[');
            value(sb, keyType, kg.getElementOrNull(keys, k));
            sb.append(',');
            value(sb, valueType, vg.getElementOrNull(values, k));
            sb.append(']');
        }
        sb.append(']');
    }

    private static void number(StringBuilder sb, double d) {
        if (Double.isNaN(d) || Double.isInfinite(d)) {
            sb.append('"').append(d).append('"');
        } else if (d == 0 && 1 / d < 0) {
            sb.append("\"-0.0\"");
        } else {
            sb.append(d);
        }
    }

    private static String str(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        return sb.append('"').toString();
    }

    private PaimonRead() {}
}
