import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";

/** Debian's chromium (`apt-get install chromium`; `.ci/run` installs it), or CHROMIUM_PATH. */
export function chromiumPath(): string {
  const path = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
  if (!existsSync(path)) throw new Error(`No Chromium at ${path}: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH`);
  return path;
}

/**
 * Headless Chromium for tests: no sandbox (tests may run as root), and none of the background
 * networking a closed network refuses (updates, sync, Google lookups).
 */
export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"],
  });
}
