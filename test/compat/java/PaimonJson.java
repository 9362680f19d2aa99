import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericArray;
import org.apache.paimon.data.GenericMap;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.JsonNodeFactory;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.IntType;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.MultisetType;
import org.apache.paimon.types.RowType;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The JSON form of Paimon values that natslake's Java oracles speak (PaimonRead.java's rendering, documented in its
 * class comment), both ways: {@link #row} renders a row read from Paimon, {@link #parseRow} builds a GenericRow from
 * the same form for a writer. BIGINT and DECIMAL as strings (exact); FLOAT/DOUBLE as numbers, or "NaN", "Infinity",
 * "-Infinity", "-0.0"; bytes as hex; DATE as days; TIME as millis of the day; TIMESTAMP(_LTZ) as epoch nanoseconds (a
 * string); ARRAY as a list; MAP and MULTISET as a list of [key, value] ([element, count]); ROW as an object.
 */
final class PaimonJson {

    static final ObjectMapper MAPPER = new ObjectMapper();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final BigInteger NANOS_PER_MILLI = BigInteger.valueOf(1_000_000);

    /** A row of `type` as a JSON object keyed by field name. */
    static ObjectNode row(RowType type, InternalRow row) {
        ObjectNode o = NODES.objectNode();
        List<DataField> fields = type.getFields();
        for (int k = 0; k < fields.size(); k++) {
            DataField f = fields.get(k);
            o.set(f.name(), value(f.type(), InternalRow.createFieldGetter(f.type(), k).getFieldOrNull(row)));
        }
        return o;
    }

    static JsonNode value(DataType type, Object v) {
        if (v == null) {
            return NODES.nullNode();
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return NODES.booleanNode((Boolean) v);
            case TINYINT:
                return NODES.numberNode((Byte) v);
            case SMALLINT:
                return NODES.numberNode((Short) v);
            case INTEGER:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE:
                return NODES.numberNode((Integer) v);
            case BIGINT:
                return NODES.textNode(v.toString());
            case FLOAT:
                return number(((Float) v).doubleValue());
            case DOUBLE:
                return number((Double) v);
            case DECIMAL:
                return NODES.textNode(((Decimal) v).toBigDecimal().toPlainString());
            case CHAR:
            case VARCHAR:
                return NODES.textNode(v.toString());
            case BINARY:
            case VARBINARY:
                StringBuilder hex = new StringBuilder();
                for (byte x : (byte[]) v) {
                    hex.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
                }
                return NODES.textNode(hex.toString());
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                Timestamp ts = (Timestamp) v;
                BigInteger nanos = BigInteger.valueOf(ts.getMillisecond()).multiply(NANOS_PER_MILLI).add(BigInteger.valueOf(ts.getNanoOfMillisecond()));
                return NODES.textNode(nanos.toString());
            case ARRAY: {
                DataType element = ((ArrayType) type).getElementType();
                InternalArray a = (InternalArray) v;
                InternalArray.ElementGetter getter = InternalArray.createElementGetter(element);
                ArrayNode out = NODES.arrayNode();
                for (int k = 0; k < a.size(); k++) {
                    out.add(value(element, getter.getElementOrNull(a, k)));
                }
                return out;
            }
            case MAP:
                return pairs(((MapType) type).getKeyType(), ((MapType) type).getValueType(), (InternalMap) v);
            case MULTISET:
                return pairs(((MultisetType) type).getElementType(), new IntType(false), (InternalMap) v);
            case ROW:
                return row((RowType) type, (InternalRow) v);
            default:
                throw new IllegalArgumentException("no JSON rendering for " + type);
        }
    }

    private static ArrayNode pairs(DataType keyType, DataType valueType, InternalMap m) {
        InternalArray.ElementGetter kg = InternalArray.createElementGetter(keyType);
        InternalArray.ElementGetter vg = InternalArray.createElementGetter(valueType);
        ArrayNode out = NODES.arrayNode();
        for (int k = 0; k < m.size(); k++) {
            out.addArray().add(value(keyType, kg.getElementOrNull(m.keyArray(), k))).add(value(valueType, vg.getElementOrNull(m.valueArray(), k)));
        }
        return out;
    }

    private static JsonNode number(double d) {
        if (Double.isNaN(d) || Double.isInfinite(d)) {
            return NODES.textNode(Double.toString(d));
        }
        if (d == 0 && 1 / d < 0) {
            return NODES.textNode("-0.0");
        }
        return NODES.numberNode(d);
    }

    /** A GenericRow of `type` from a JSON object in the rendered form; absent fields are null. */
    static GenericRow parseRow(RowType type, JsonNode o) {
        if (!o.isObject()) {
            throw new IllegalArgumentException("a row must be a JSON object, got " + o);
        }
        for (Iterator<String> names = o.fieldNames(); names.hasNext(); ) {
            String name = names.next();
            if (!type.containsField(name)) {
                throw new IllegalArgumentException("no column " + name + " (columns: " + type.getFieldNames() + ")");
            }
        }
        GenericRow row = new GenericRow(type.getFieldCount());
        for (int k = 0; k < type.getFieldCount(); k++) {
            DataField f = type.getFields().get(k);
            row.setField(k, parse(f.type(), o.get(f.name())));
        }
        return row;
    }

    static Object parse(DataType type, JsonNode v) {
        if (v == null || v.isNull()) {
            return null;
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return v.asBoolean();
            case TINYINT:
                return (byte) v.asInt();
            case SMALLINT:
                return (short) v.asInt();
            case INTEGER:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE:
                return v.asInt();
            case BIGINT:
                return Long.parseLong(v.asText());
            case FLOAT:
                return (float) parseDouble(v);
            case DOUBLE:
                return parseDouble(v);
            case DECIMAL: {
                org.apache.paimon.types.DecimalType d = (org.apache.paimon.types.DecimalType) type;
                Decimal dec = Decimal.fromBigDecimal(new BigDecimal(v.asText()), d.getPrecision(), d.getScale());
                if (dec == null) {
                    throw new IllegalArgumentException(v.asText() + " does not fit " + type);
                }
                return dec;
            }
            case CHAR:
            case VARCHAR:
                return BinaryString.fromString(v.asText());
            case BINARY:
            case VARBINARY: {
                String hex = v.asText();
                byte[] bytes = new byte[hex.length() / 2];
                for (int k = 0; k < bytes.length; k++) {
                    bytes[k] = (byte) Integer.parseInt(hex.substring(2 * k, 2 * k + 2), 16);
                }
                return bytes;
            }
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE: {
                BigInteger[] qr = new BigInteger(v.asText()).divideAndRemainder(NANOS_PER_MILLI);
                long millis = qr[0].longValueExact();
                int nanoOfMilli = qr[1].intValue();
                if (nanoOfMilli < 0) {
                    millis -= 1;
                    nanoOfMilli += 1_000_000;
                }
                return Timestamp.fromEpochMillis(millis, nanoOfMilli);
            }
            case ARRAY: {
                DataType element = ((ArrayType) type).getElementType();
                Object[] out = new Object[v.size()];
                for (int k = 0; k < out.length; k++) {
                    out[k] = parse(element, v.get(k));
                }
                return new GenericArray(out);
            }
            case MAP:
                return parsePairs(((MapType) type).getKeyType(), ((MapType) type).getValueType(), v);
            case MULTISET:
                return parsePairs(((MultisetType) type).getElementType(), new IntType(false), v);
            case ROW:
                return parseRow((RowType) type, v);
            default:
                throw new IllegalArgumentException("no JSON parsing for " + type);
        }
    }

    private static GenericMap parsePairs(DataType keyType, DataType valueType, JsonNode v) {
        Map<Object, Object> out = new LinkedHashMap<>();
        for (JsonNode pair : v) {
            out.put(parse(keyType, pair.get(0)), parse(valueType, pair.get(1)));
        }
        return new GenericMap(out);
    }

    private static double parseDouble(JsonNode v) {
        return v.isNumber() ? v.asDouble() : Double.parseDouble(v.asText());
    }

    /** An exception and its causes, one per line: what a failed request reports. */
    static String chain(Throwable e) {
        StringBuilder msg = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            msg.append(msg.length() == 0 ? "" : "\ncaused by: ").append(t);
        }
        return msg.toString();
    }

    private PaimonJson() {}
}
