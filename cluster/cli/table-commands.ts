/**
 * `natslake table create|describe|alter|reset-offsets|drop|list`, and `natslake snapshots`.
 */
import type { Command } from "commander";
import { parseColumnList, typeToSql } from "../../src/format/data-types.ts";
import { ErrorKind, isLakeError } from "../../src/errors.ts";
import { adminRequest } from "../admin-client.ts";
import type { DropResult } from "../table-drop.ts";
import { parseIdentifier } from "../../src/table/catalog.ts";
import { catalogFrom, collectKeyValue, connectOrExplain, renderTable, UsageError, type WarehouseOpts, WAREHOUSE_FLAG, WAREHOUSE_HELP, examples } from "./common.ts";
import { redactUrl } from "../nats/connect-errors.ts";

const splitList = (v: string): string[] =>
  v
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);

/** What a drop through the cluster removed, in one line. */
function describeDrop(r: DropResult): string {
  const parts = [r.files ? `its files at ${r.path}` : "no files (not in the warehouse)"];
  if (r.streams.length > 0) parts.push(`streams ${r.streams.join(", ")}`);
  parts.push(`${r.kvKeys} KV key${r.kvKeys === 1 ? "" : "s"}`, `${r.deadLetters} dead letter${r.deadLetters === 1 ? "" : "s"}`);
  return parts.join(", ") + (r.stoppedOn.length > 0 ? ` (served by ${r.stoppedOn.join(", ")}, stopped first)` : "");
}

export function registerTableCommands(program: Command, out: (s: string) => void): void {
  const table = program.command("table").description("create, describe, drop and list tables").addHelpText("after", examples("natslake table create shop.orders --columns \"id BIGINT NOT NULL, msg STRING\" --option bucket=4 --option bucket-key=id", "natslake table list --warehouse /data/wh"));

  table
    .command("create <table>")
    .description("create a table named <db>.<table>")
    .requiredOption("--columns <spec>", 'columns, e.g. "id BIGINT NOT NULL, name STRING, tags ARRAY<STRING>"')
    .option("--partition-keys <cols>", "comma-separated partition columns")
    .option("--primary-key <cols>", "comma-separated primary-key columns: an upsert table (needs --option bucket=N; a partitioned table's key includes its partition columns)")
    .option("--option <key=value>", "table option (repeatable), e.g. --option bucket=4 --option bucket-key=id", collectKeyValue, {})
    .option("--comment <text>", "table comment")
    .option("--if-not-exists", "succeed when the table exists already")
    .option(WAREHOUSE_FLAG, WAREHOUSE_HELP)
    .option("--nats <url>", "create it through a running cluster (also creates its ingest stream and producer metadata)")
    .option("--prefix <p>", "subject prefix with --nats", "lake")
    .addHelpText("after", examples("natslake table create shop.orders --columns \"id BIGINT NOT NULL, dt STRING NOT NULL, amount DECIMAL(10, 2)\" --partition-keys dt --option bucket=4 --option bucket-key=id --warehouse /data/wh", "natslake table create shop.orders --columns \"id BIGINT NOT NULL, msg STRING\" --option bucket=4 --option bucket-key=id --nats nats://127.0.0.1:4222"))
    .action(async (name: string, o: WarehouseOpts & { columns: string; partitionKeys?: string; primaryKey?: string; option: Record<string, string>; comment?: string; ifNotExists?: boolean; nats?: string; prefix: string }) => {
      const id = parseIdentifier(name);
      const columns = parseColumnList(o.columns);
      if (columns.length === 0) throw new UsageError("--columns lists no column");
      if (o.nats) {
        const nc = await connectOrExplain({ ...o, nats: o.nats });
        try {
          const r = (await adminRequest(nc, o.prefix, {
            type: "create-table",
            table: name,
            columns: o.columns,
            partitionKeys: o.partitionKeys ? splitList(o.partitionKeys) : [],
            primaryKeys: o.primaryKey ? splitList(o.primaryKey) : [],
            options: o.option,
          }).catch((e: unknown) => {
            // As on the warehouse: the table as it is, not compared with these columns and options.
            if (o.ifNotExists === true && isLakeError(e, ErrorKind.AlreadyExists)) return null;
            throw e;
          })) as { table: string; path: string } | null;
          out(r === null ? `${name} exists already (--if-not-exists): left as it is` : `created ${r.table} at ${r.path} (through the cluster at ${redactUrl(o.nats)})`);
        } finally {
          await nc.close();
        }
        return;
      }
      const t = await catalogFrom(o).createTable(
        id,
        {
          columns,
          partitionKeys: o.partitionKeys ? splitList(o.partitionKeys) : [],
          primaryKeys: o.primaryKey ? splitList(o.primaryKey) : [],
          options: o.option,
          ...(o.comment !== undefined ? { comment: o.comment } : {}),
        },
        { ignoreIfExists: o.ifNotExists ?? false },
      );
      out(`created ${t.name} at ${t.location}`);
    });

  table
    .command("describe <table>")
    .description("show a table's columns, keys, options and latest snapshot")
    .option("--json", "print the schema as JSON")
    .option(WAREHOUSE_FLAG, WAREHOUSE_HELP)
    .addHelpText("after", examples("natslake table describe shop.orders --warehouse /data/wh --json"))
    .action(async (name: string, o: WarehouseOpts & { json?: boolean }) => {
      const t = await catalogFrom(o, { mustExist: true }).getTable(parseIdentifier(name));
      const latest = await t.snapshots.latest();
      if (o.json) {
        out(
          JSON.stringify(
            {
              table: t.name,
              path: t.location,
              schemaId: t.schema.id,
              columns: t.schema.fields.map((f) => ({ id: f.id, name: f.name, type: typeToSql(f.type) })),
              partitionKeys: t.schema.partitionKeys,
              primaryKeys: t.schema.primaryKeys,
              options: t.schema.options,
              latestSnapshot: latest?.id ?? null,
              totalRecordCount: latest?.totalRecordCount ?? 0,
            },
            null,
            2,
          ),
        );
        return;
      }
      out(`table    ${t.name}`);
      out(`path     ${t.location}`);
      out(`schema   ${t.schema.id}`);
      out(renderTable(["id", "column", "type"], t.schema.fields.map((f) => [f.id, f.name, typeToSql(f.type)])));
      out(`partition keys  ${t.schema.partitionKeys.join(", ") || "(none)"}`);
      out(`primary key     ${t.schema.primaryKeys.join(", ") || "(none)"}`);
      out(`options         ${Object.entries(t.schema.options).map(([k, v]) => `${k}=${v}`).join(", ")}`);
      out(latest ? `latest snapshot ${latest.id} (${latest.totalRecordCount} rows, ${new Date(latest.timeMillis).toISOString()})` : "latest snapshot (none)");
    });

  table
    .command("reset-offsets <table>")
    .description(
      "move a table onto its live ingest stream after the stream was deleted and re-created or its JetStream store lost " +
        "(the cluster refuses such a stream until then: its sequence numbers would skip acknowledged rows)",
    )
    .requiredOption("--nats <url>", "a running cluster (the request is served by a reader node)")
    .option("--from <where>", "earliest: read everything the live stream holds; latest: skip what it holds now", "earliest")
    .option("--prefix <p>", "subject prefix", "lake")
    .addHelpText("after", examples("natslake table reset-offsets shop.orders --nats nats://127.0.0.1:4222 --from earliest"))
    .action(async (name: string, o: { nats: string; from: string; prefix: string }) => {
      parseIdentifier(name);
      if (o.from !== "earliest" && o.from !== "latest") throw new UsageError(`--from is earliest or latest, not '${o.from}'`);
      const nc = await connectOrExplain({ ...o, nats: o.nats });
      try {
        const r = (await adminRequest(nc, o.prefix, { type: "reset-offsets", table: name, from: o.from }, 30_000)) as { snapshotId: number; stream: string; offset: number; offsetEpoch: number; routerReset: boolean };
        out(
          `reset ${name} onto stream ${r.stream}: every bucket resumes after sequence ${r.offset} (snapshot ${r.snapshotId}, offset epoch ${r.offsetEpoch}` +
            `${r.routerReset ? "; router progress moved too" : ""})`,
        );
      } finally {
        await nc.close();
      }
    });

  table
    .command("alter <table>")
    .description("change a table's schema: add nullable columns (a running cluster and its producers follow within seconds)")
    .requiredOption("--add-column <spec>", 'column(s) to add, e.g. "note STRING, score DOUBLE" (repeatable)', (v: string, acc: string[]) => [...acc, v], [] as string[])
    .option(WAREHOUSE_FLAG, WAREHOUSE_HELP)
    .addHelpText("after", examples("natslake table alter shop.orders --add-column \"note STRING, score DOUBLE\" --warehouse /data/wh"))
    .action(async (name: string, o: WarehouseOpts & { addColumn: string[] }) => {
      const columns = o.addColumn.flatMap((spec) => parseColumnList(spec));
      if (columns.length === 0) throw new UsageError("--add-column names no column");
      const t = await catalogFrom(o).addColumns(parseIdentifier(name), columns);
      out(`altered ${t.name}: schema ${t.schema.id} adds ${columns.map((c) => `${c.name} ${typeToSql(c.type)}`).join(", ")}`);
    });

  table
    .command("drop <table>")
    .description(
      "drop a table and delete its files; with --nats also its streams, metadata and dead letters on the cluster " +
        "(without it, a cluster serving the warehouse stops the table and removes them at its next table scan)",
    )
    .option("--if-exists", "succeed when the table does not exist")
    .option(WAREHOUSE_FLAG, WAREHOUSE_HELP)
    .option("--nats <url>", "drop it through a running cluster: every node stops serving it first, then its files, streams, KV keys and dead letters go")
    .option("--prefix <p>", "subject prefix with --nats", "lake")
    .addHelpText("after", examples("natslake table drop shop.orders --if-exists --warehouse /data/wh", "natslake table drop shop.orders --nats nats://127.0.0.1:4222"))
    .action(async (name: string, o: WarehouseOpts & { ifExists?: boolean; nats?: string; prefix: string }) => {
      const id = parseIdentifier(name);
      if (o.nats) {
        const nc = await connectOrExplain({ ...o, nats: o.nats });
        try {
          const r = (await adminRequest(nc, o.prefix, { type: "drop-table", table: name, ...(o.ifExists === true ? { ifExists: true } : {}) })) as DropResult | null;
          out(r === null ? `${name} does not exist (--if-exists): nothing dropped` : `dropped ${name} through the cluster at ${redactUrl(o.nats)}: ${describeDrop(r)}`);
        } finally {
          await nc.close();
        }
        return;
      }
      await catalogFrom(o, { mustExist: !(o.ifExists ?? false) }).dropTable(id, o.ifExists ?? false);
      out(`dropped ${name}`);
    });

  table
    .command("list [db]")
    .description("list the tables of a database, or of every database")
    .option(WAREHOUSE_FLAG, WAREHOUSE_HELP)
    .addHelpText("after", examples("natslake table list shop --warehouse /data/wh"))
    .action(async (db: string | undefined, o: WarehouseOpts) => {
      const catalog = catalogFrom(o, { mustExist: true });
      const dbs = db === undefined ? await catalog.listDatabases() : [db];
      for (const d of dbs) for (const t of await catalog.listTables(d)) out(`${d}.${t}`);
    });

  program
    .command("snapshots <table>")
    .description("list a table's snapshots")
    .option("--json", "one JSON object per snapshot")
    .option(WAREHOUSE_FLAG, WAREHOUSE_HELP)
    .addHelpText("after", examples("natslake snapshots shop.orders --warehouse /data/wh --json"))
    .action(async (name: string, o: WarehouseOpts & { json?: boolean }) => {
      const t = await catalogFrom(o, { mustExist: true }).getTable(parseIdentifier(name));
      const ids = await t.snapshots.listIds();
      const snaps = await Promise.all(ids.map((id) => t.snapshots.snapshot(id)));
      if (o.json) {
        for (const s of snaps) {
          out(JSON.stringify({ id: s.id, kind: s.commitKind, time: new Date(s.timeMillis).toISOString(), timeMillis: s.timeMillis, commitUser: s.commitUser, commitIdentifier: s.commitIdentifier.toString(), totalRecordCount: s.totalRecordCount, deltaRecordCount: s.deltaRecordCount, schemaId: s.schemaId, properties: s.properties ?? {} }));
        }
        return;
      }
      out(renderTable(["id", "kind", "time", "rows", "delta", "commit user"], snaps.map((s) => [s.id, s.commitKind, new Date(s.timeMillis).toISOString(), s.totalRecordCount, s.deltaRecordCount, s.commitUser])));
    });
}
