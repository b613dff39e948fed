/** Where a command writes: the terminal in the `svc` process, a buffer in tests. */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
}
