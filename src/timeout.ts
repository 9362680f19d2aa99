/**
 * One bounded wait for the whole code base: `withTimeout(work, ms, onTimeout)` settles like `work`, or — when `ms`
 * pass first — with what `onTimeout` returns (a fallback value) or throws (a classified error). The timer is cleared
 * either way, so a finished wait never keeps the process alive. `work` itself is not cancelled; callers that own
 * something cancellable stop it in their own `finally`.
 */
export async function withTimeout<T, U = never>(work: Promise<T>, ms: number, onTimeout: () => U): Promise<T | U> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<U>((resolve, reject) => {
    timer = setTimeout(() => {
      try {
        resolve(onTimeout());
      } catch (e) {
        reject(e instanceof Error ? e : new Error(String(e)));
      }
    }, ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
