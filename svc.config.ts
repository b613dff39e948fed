// `pnpm svc dev` and `pnpm svc worker` in svc's repository: the example tasks of examples/hello,
// the ones `pnpm start` runs. (A project of your own imports defineConfig from @svc/runtime; svc's
// repository root does not depend on it.)
export default { dirs: ["./examples/hello/src/tasks"] };
