/** Real servers for integration tests: the same launcher `natslake up` uses (cluster/local/servers.ts). */
export { freePort, startNats, startRedis, type ServerHandle, type NatsOptions, type RedisOptions } from "../../cluster/local/servers.ts";
