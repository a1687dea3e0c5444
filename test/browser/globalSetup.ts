// The browser suite's one setup: a Chromium to drive (Debian's package, installed when missing).
import { ensureChromium } from "../../bin/chromium.ts";

export default function setup(): void {
  ensureChromium();
}
