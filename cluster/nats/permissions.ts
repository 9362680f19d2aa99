/**
 * The NATS permissions of each natslake role, from one table (ROLE_GRANTS), and the nats-server `authorization` block
 * made of it. docs/operations/permissions.md, compose/nats/permissions.conf and the least-privilege test are all
 * written from here, so what is documented is what is shipped and what is tested.
 *
 * A grant names subjects for some tables: a list of `db.table`, or `*` (every table, now and later — each table token
 * becomes a `*` wildcard, and a stream name in a JetStream API subject becomes `*` too, since NATS wildcards match
 * whole tokens only). Every user gets its own inbox prefix, `_INBOX.<user>` (the process sets it:
 * NATSLAKE_INBOX_PREFIX, cluster/nats/inbox.ts), and may subscribe to nothing else of the inboxes: one client cannot
 * read the replies or consume sessions of another.
 *
 * Nodes use the JetStream API widely (they create, update, purge and delete the streams and KV buckets of tables
 * created at run time, and their consumers): they get `$JS.API.>`, which is why natslake should have a NATS account
 * of its own. No other role gets more of the JetStream API than the calls it makes, and no role gets `$JS.>`.
 */
import type { Identifier } from "../../src/table/table.ts";
import { dataInvalid } from "../../src/errors.ts";
import type { Subjects } from "./subjects.ts";
import { checkSubjectToken } from "./subjects.ts";
import { clientInboxPrefix } from "./inbox.ts";

export const ROLES = ["producer", "consumer", "lookup", "operator", "writer", "committer", "reader"] as const;
export type Role = (typeof ROLES)[number];

/** The roles that are natslake nodes (`natslake node --roles …`); the others are clients. */
export const NODE_ROLES: readonly Role[] = ["writer", "committer", "reader"];

export interface SubjectRules {
  allow: string[];
  deny: string[];
}

export interface Permissions {
  publish: SubjectRules;
  subscribe: SubjectRules;
}

/** The names a grant uses for one table — or, for `*`, wildcards that stand for every table. */
interface TableNames {
  /** `<db>.<table>` as subject tokens (`*.*` for every table). */
  key: string;
  /** The ingest stream's name (`*` for every table). */
  ingestStream: string;
  commitStream: string;
  ingestRaw: string;
  ingestBuckets: string;
  streamId: string;
  commit: string;
  dlq: string;
  snap: string;
  maint: string;
  consumeOpen: string;
  lookup: string;
  reject: string;
}

function tableNames(s: Subjects, id: Identifier | "*"): TableNames {
  if (id === "*") {
    const p = s.prefix;
    return {
      key: "*.*",
      ingestStream: "*",
      commitStream: "*",
      ingestRaw: `${p}.in.*.*`,
      ingestBuckets: `${p}.in.*.*.*`,
      streamId: `${p}.in.*.*.stream-id`,
      commit: `${p}.commit.*.*`,
      dlq: `${p}.dlq.*.*`,
      snap: `${p}.snap.*.*`,
      maint: `${p}.ctl.maint.*.*`,
      consumeOpen: `${p}.ctl.consume.open.*.*`,
      lookup: `${p}.ctl.lookup.*.*`,
      reject: `${p}.ctl.reject.*.*.*`,
    };
  }
  return {
    key: s.tableKey(id),
    ingestStream: s.ingestStream(id),
    commitStream: s.commitStream(id),
    ingestRaw: s.ingestRaw(id),
    ingestBuckets: s.ingestAllBuckets(id),
    streamId: s.ingestStreamId(id),
    commit: s.commit(id),
    dlq: s.dlq(id),
    snap: s.snapshots(id),
    maint: s.maintenance(id),
    consumeOpen: s.consumeOpenTable(id),
    lookup: s.lookup(id),
    reject: `${s.prefix}.ctl.reject.${s.tableKey(id)}.*`,
  };
}

/** What one grant adds: subjects to publish to and subscribe to (allowed, denied). */
interface Grant {
  pub?: string[];
  sub?: string[];
  denyPub?: string[];
  denySub?: string[];
}

/** Reading one key of a KV bucket: the bucket's stream info (opening it) and a direct get of that key only. */
function kvGet(bucket: string, key: string): string[] {
  return [`$JS.API.STREAM.INFO.KV_${bucket}`, `$JS.API.DIRECT.GET.KV_${bucket}.$KV.${bucket}.${key}`];
}

/**
 * Watching one key of a KV bucket: an ordered push consumer filtered to that key (the filter is in the create
 * subject, so no other key can be asked for), its info and deletion, and its flow-control replies.
 */
function kvWatch(bucket: string, key: string): string[] {
  return [`$JS.API.CONSUMER.CREATE.KV_${bucket}.*.$KV.${bucket}.${key}`, `$JS.API.CONSUMER.INFO.KV_${bucket}.*`, `$JS.API.CONSUMER.DELETE.KV_${bucket}.*`, `$JS.FC.KV_${bucket}.>`];
}

/** The cluster-wide grants of a role (for any table) and its grants per table. */
interface RoleGrants {
  what: string;
  cluster(s: Subjects): Grant;
  table(s: Subjects, t: TableNames): Grant;
}

/** Every KV bucket the nodes keep (cluster/nats/subjects.ts). */
function clusterKvSubjects(s: Subjects): string[] {
  return [s.tablesKv, s.membersKv, s.assignKv, s.snapKv, s.routerKv, s.dlqReplaysKv, s.attemptsKv].map((b) => `$KV.${b}.>`);
}

/** What every node does, whatever its roles: JetStream, the cluster's KV, control requests to itself. */
function nodeCluster(s: Subjects): Grant {
  return {
    pub: ["$JS.API.>", "$JS.ACK.>", "$JS.FC.>", ...clusterKvSubjects(s), "_INBOX.>"],
    // Node control and table stops are answered only by the node they name; its id is not known here. Replies (several
    // per request: maintenance and drain progress) go to inboxes, and only to inboxes (cluster/nats/inbox.ts).
    sub: [`${s.prefix}.ctl.node.*`, `${s.prefix}.ctl.stop-table.*`],
  };
}

/** The role table: what each role publishes and subscribes to, beyond its own inbox. */
export const ROLE_GRANTS: Readonly<Record<Role, RoleGrants>> = {
  producer: {
    what: "publishes rows to its tables (producer client, `natslake publish`) and waits for them to be visible",
    // The JetStream client checks the API once (account information: limits and usage, no stream's content).
    cluster: () => ({ pub: ["$JS.API.INFO"] }),
    table: (s, t) => ({
      pub: [
        t.ingestRaw,
        t.ingestBuckets,
        ...kvGet(s.tablesKv, t.key),
        ...kvWatch(s.tablesKv, t.key),
        // waitVisible: which stream is live (its identity marker, read by a message get: the ingest stream has no
        // direct get, so the subject read is in the request's body and this grant reads any message of the table's
        // own ingest stream — rows of a table it may write anyway), and the snapshot notifications.
        `$JS.API.STREAM.INFO.${t.ingestStream}`,
        `$JS.API.STREAM.MSG.GET.${t.ingestStream}`,
        ...kvGet(s.snapKv, t.key),
      ],
      // The identity marker is the nodes' to write: a producer that wrote another would make the stream look new.
      denyPub: [t.streamId],
      sub: [t.snap],
    }),
  },
  consumer: {
    what: "opens consume sessions on its tables over NATS (consumer client, `natslake tail --nats`) and follows their snapshot notifications",
    cluster: (s) => ({
      // Session ids are random (128 bits) and known only to the consumer that opened the session.
      pub: [`${s.prefix}.ctl.consume.s.*`],
    }),
    table: (s, t) => ({ pub: [t.consumeOpen, ...kvGet(s.snapKv, t.key)], sub: [t.snap] }),
  },
  lookup: {
    what: "looks rows of its tables up by key through the reader nodes (lookup client, `natslake get --nats`)",
    // The request names the table in its subject; the reply comes to the client's own inbox.
    cluster: () => ({}),
    table: (_s, t) => ({ pub: [t.lookup] }),
  },
  operator: {
    what: "the admin CLI: table create/drop/reset-offsets over NATS, maintenance through the leader, node drain, status, dead letters",
    cluster: (s) => ({
      pub: [
        s.admin,
        `${s.prefix}.ctl.node.*`,
        // Reading JetStream state (status, dlq list/show): information and reads, never a change to a stream.
        "$JS.API.INFO",
        "$JS.API.STREAM.NAMES",
        "$JS.API.STREAM.LIST",
        "$JS.API.STREAM.INFO.*",
        "$JS.API.STREAM.MSG.GET.*",
        "$JS.API.DIRECT.GET.>",
        "$JS.API.CONSUMER.CREATE.>",
        "$JS.API.CONSUMER.INFO.*.*",
        "$JS.API.CONSUMER.DELETE.*.*",
        "$JS.API.CONSUMER.MSG.NEXT.*.*",
        "$JS.FC.>",
        `$KV.${s.dlqReplaysKv}.>`,
      ],
    }),
    // dlq replay publishes rows again.
    table: (_s, t) => ({ pub: [t.maint, t.ingestRaw, t.ingestBuckets], denyPub: [t.streamId], sub: [t.snap] }),
  },
  writer: {
    what: "a node with the writer role: reads its buckets from the ingest streams, writes data files, sends committables",
    cluster: nodeCluster,
    table: (_s, t) => ({ pub: [t.commit, t.dlq, t.streamId], sub: [t.reject, t.snap] }),
  },
  committer: {
    what: "a node with the committer role: leads tables (commits, assigns buckets, routes raw rows, runs maintenance)",
    cluster: nodeCluster,
    table: (_s, t) => ({ pub: [t.snap, t.reject, t.ingestBuckets, t.dlq], sub: [t.maint, t.snap] }),
  },
  reader: {
    what: "a node with the reader role: answers admin requests and lookups, serves consume sessions to the consumers' inboxes",
    cluster: (s) => {
      const base = nodeCluster(s);
      return {
        ...base,
        // Table drops ask every node to stop serving the table. (A consume session's rows go to the inbox its consumer
        // named, checked to be an inbox.)
        pub: [...base.pub!, `${s.prefix}.ctl.stop-table.*`],
        sub: [...base.sub!, s.admin, s.consumeOpen, `${s.prefix}.ctl.consume.s.*`],
      };
    },
    table: (_s, t) => ({ pub: [t.streamId], sub: [t.consumeOpen, t.lookup, t.snap, t.commit] }),
  },
};

export interface UserSpec {
  /** The user's name: its entry's `user`, and its inbox prefix (`_INBOX.<user>`) either way. */
  user: string;
  /**
   * How the user proves who it is. A password as nats-server's config reads it: `{ env: "NAME" }` writes a reference
   * to an environment variable of the server (`$NAME`), `{ literal: "…" }` the text itself (tests). Or `{ nkey: "U…" }`:
   * the public key of the user's nkey — the entry is then `nkey: "U…"` without user or password, and the client signs
   * the server's challenge with the seed (`--nats-nkey <seed file>`); its name still makes its inbox prefix.
   */
  password: { env: string } | { literal: string } | { nkey: string };
  roles: readonly Role[];
  /** `db.table` names, or `*` for every table. */
  tables: readonly string[] | "*";
}

/** The permissions of one user: the union of its roles' grants over its tables, and its own inbox. */
export function permissionsOf(spec: UserSpec, subjects: Subjects): Permissions {
  if (spec.roles.length === 0) throw dataInvalid(`user '${spec.user}' has no role`);
  const ids: Array<Identifier | "*"> = spec.tables === "*" ? ["*"] : spec.tables.map((t) => subjects.table(t));
  const grants: Grant[] = [];
  for (const role of spec.roles) {
    const rules = ROLE_GRANTS[role];
    if (rules === undefined) throw dataInvalid(`user '${spec.user}': unknown role '${String(role)}' (roles: ${ROLES.join(", ")})`);
    grants.push(rules.cluster(subjects));
    for (const id of ids) grants.push(rules.table(subjects, tableNames(subjects, id)));
  }
  const uniq = (xs: Array<string[] | undefined>): string[] => [...new Set(xs.flatMap((x) => x ?? []))];
  return {
    publish: { allow: uniq(grants.map((g) => g.pub)), deny: uniq(grants.map((g) => g.denyPub)) },
    subscribe: { allow: uniq([[`${clientInboxPrefix(spec.user)}.>`], ...grants.map((g) => g.sub)]), deny: uniq(grants.map((g) => g.denySub)) },
  };
}

function confList(xs: readonly string[]): string {
  return `[${xs.map((x) => JSON.stringify(x)).join(", ")}]`;
}

function confRules(r: SubjectRules): string {
  return `{ allow: ${confList(r.allow)}${r.deny.length > 0 ? `, deny: ${confList(r.deny)}` : ""} }`;
}

/**
 * A user outside the role table, with the permissions given (a test harness's own user, e.g. the chaos suite's
 * readiness probe: it needs JetStream calls no natslake process makes, so no role is widened for it).
 */
export interface ExplicitUserSpec {
  user: string;
  password: UserSpec["password"];
  /** What the user is for (the comment above its entry). */
  what: string;
  permissions: Permissions;
}

/**
 * nats-server's `authorization { users: [...] }` block for these users. Subjects are quoted (an unquoted `$JS…` would
 * be read as a variable); a password given by environment variable is written as a reference the server resolves.
 */
export function authorizationBlock(users: ReadonlyArray<UserSpec | ExplicitUserSpec>, subjects: Subjects): string {
  const names = new Set<string>();
  const lines: string[] = [];
  for (const u of users) {
    checkSubjectToken("user name", u.user);
    if (names.has(u.user)) throw dataInvalid(`user '${u.user}' is given twice`);
    names.add(u.user);
    const p = "permissions" in u ? u.permissions : permissionsOf(u, subjects);
    const what = "permissions" in u ? u.what : `${u.roles.join(", ")} — tables: ${u.tables === "*" ? "every table" : u.tables.join(", ")}`;
    lines.push(`    # ${"nkey" in u.password ? `${u.user} (nkey): ` : ""}${what}; inbox prefix ${clientInboxPrefix(u.user)}`);
    lines.push(`    {`);
    if ("nkey" in u.password) lines.push(`      nkey: ${JSON.stringify(checkUserNkey(u.user, u.password.nkey))}`);
    else {
      lines.push(`      user: ${JSON.stringify(u.user)}`);
      lines.push(`      password: ${"env" in u.password ? `$${checkEnvName(u.password.env)}` : JSON.stringify(u.password.literal)}`);
    }
    lines.push(`      permissions: {`);
    lines.push(`        publish: ${confRules(p.publish)}`);
    lines.push(`        subscribe: ${confRules(p.subscribe)}`);
    lines.push(`      }`);
    lines.push(`    }`);
  }
  return `authorization {\n  users: [\n${lines.join("\n")}\n  ]\n}\n`;
}

/** A user nkey's public key: `U` and 55 base32 characters (a seed, `SU…`, is refused: it is the secret). */
function checkUserNkey(user: string, key: string): string {
  if (!/^U[A-Z2-7]{55}$/.test(key)) throw dataInvalid(`user '${user}': '${key.slice(0, 2)}…' is not a user nkey's public key (U followed by 55 base32 characters)`);
  return key;
}

function checkEnvName(name: string): string {
  if (!/^[A-Z_][A-Z0-9_]*$/.test(name)) throw dataInvalid(`environment variable name '${name}' must be upper-case letters, digits and '_'`);
  return name;
}
