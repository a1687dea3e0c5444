// The dashboard's icon, drawn here so that no binary lives in the repository: a seal (a white ring
// and dot) on the dashboard's accent blue, as SVG for browsers that take one (/dashboard/favicon.svg)
// and as an ICO holding a 32×32 PNG (/favicon.ico, /dashboard/favicon.ico), which dashboard/build.ts
// writes beside the bundle and the edge serves (workers/dashboard.ts).
import { deflateSync, crc32 } from "node:zlib";

const ACCENT = [0x3a, 0x4f, 0xd8] as const;

export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#3a4fd8"/><circle cx="16" cy="16" r="7.75" fill="none" stroke="#fff" stroke-width="3.5"/><circle cx="16" cy="16" r="2.75" fill="#fff"/></svg>
`;

/** The colour and coverage of the icon at (x, y) in a 32-unit square. */
function sample(x: number, y: number): [r: number, g: number, b: number, a: number] {
  // The rounded square (radius 7).
  const r = 7;
  const cx = Math.min(Math.max(x, r), 32 - r);
  const cy = Math.min(Math.max(y, r), 32 - r);
  if ((x - cx) ** 2 + (y - cy) ** 2 > r * r) return [0, 0, 0, 0];
  const d = Math.hypot(x - 16, y - 16);
  const white = Math.abs(d - 7.75) <= 1.75 || d <= 2.75;
  return white ? [255, 255, 255, 255] : [...ACCENT, 255];
}

/** The icon as a size×size PNG, each pixel the mean of 4×4 samples (smooth edges). */
export function faviconPng(size = 32): Buffer {
  const raw = Buffer.alloc(size * (size * 4 + 1));
  const n = 4;
  for (let py = 0; py < size; py++) {
    raw[py * (size * 4 + 1)] = 0; // filter: none
    for (let px = 0; px < size; px++) {
      let [r, g, b, a] = [0, 0, 0, 0];
      for (let sy = 0; sy < n; sy++)
        for (let sx = 0; sx < n; sx++) {
          const [sr, sg, sb, sa] = sample(((px + (sx + 0.5) / n) * 32) / size, ((py + (sy + 0.5) / n) * 32) / size);
          r += sr * sa;
          g += sg * sa;
          b += sb * sa;
          a += sa;
        }
      const at = py * (size * 4 + 1) + 1 + px * 4;
      raw[at] = a ? Math.round(r / a) : 0;
      raw[at + 1] = a ? Math.round(g / a) : 0;
      raw[at + 2] = a ? Math.round(b / a) : 0;
      raw[at + 3] = Math.round(a / (n * n));
    }
  }
  const chunk = (type: string, data: Buffer) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, "ascii");
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
    return Buffer.concat([head, data, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 6; // RGBA
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", deflateSync(raw, { level: 9 })),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

/** An ICO file of one image, a PNG (every browser since IE 11 reads PNG inside ICO). */
export function faviconIco(size = 32): Buffer {
  const png = faviconPng(size);
  const header = Buffer.alloc(6 + 16);
  header.writeUInt16LE(0, 0); // reserved
  header.writeUInt16LE(1, 2); // type: icon
  header.writeUInt16LE(1, 4); // one image
  header[6] = size; // width
  header[7] = size; // height
  header[8] = 0; // no palette
  header[9] = 0;
  header.writeUInt16LE(1, 10); // colour planes
  header.writeUInt16LE(32, 12); // bits per pixel
  header.writeUInt32LE(png.length, 14);
  header.writeUInt32LE(6 + 16, 18); // where the image starts
  return Buffer.concat([header, png]);
}
