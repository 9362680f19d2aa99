/**
 * JetStream API error codes natslake acts on (nats-server's `err_code`, stable across releases), and the test for
 * one: written once here rather than as a literal in each module that handles it.
 */
import { JetStreamApiError } from "@nats-io/jetstream";

/** "stream not found": a table's stream deleted (a drop) or not made yet. */
export const STREAM_NOT_FOUND = 10059;
/** "stream name already in use with a different configuration": two nodes creating a table's stream at once. */
export const STREAM_NAME_IN_USE = 10058;
/** "JetStream system temporarily unavailable": a clustered JetStream without a meta leader yet. */
export const CLUSTER_NOT_AVAILABLE = 10008;

/** Whether `e` is a JetStream API error with `code`. */
export const isJetStreamError = (e: unknown, code: number): boolean => e instanceof JetStreamApiError && e.code === code;
