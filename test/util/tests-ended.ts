/**
 * The line each test file's process prints when tape has run its last test
 * (util/assertion-guard.ts prints it; tape's own summary waits for the
 * process's exit): the runner kills a file still running long after it.
 */
export const TESTS_ENDED = '# lsm-level: every test ended'
