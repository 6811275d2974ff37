// A PNG writer built on zlib directly, for 8-bit RGB with filter "none" (the best speed/size trade-off on UI
// screenshots, see `xclaw bench capture`). Row stripes are deflated on separate threads and joined the way pigz
// does: every stripe but the last ends with Z_SYNC_FLUSH (a byte-aligned, non-final empty block), so the raw
// deflate streams concatenate into one valid zlib stream; the Adler-32 checksums combine with adler32_combine.
#include "xclaw_shim.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef struct {
    const uint8_t *bgrx; int width, row_from, row_to, level, strategy, last;
    uint8_t *out; size_t out_len; uLong adler; size_t raw_len; int rc;
} stripe_t;

/// Packs one BGRX row into a PNG scanline: filter byte 0, then RGB.
static void pack_row(const uint8_t *src, int width, uint8_t *dst) {
    *dst++ = 0;
    for (int x = 0; x < width; x++, src += 4, dst += 3) { dst[0] = src[2]; dst[1] = src[1]; dst[2] = src[0]; }
}

static void *deflate_stripe(void *arg) {
    stripe_t *s = arg;
    s->rc = -1;
    size_t line = (size_t)s->width * 3 + 1;
    int rows = s->row_to - s->row_from;
    s->raw_len = line * (size_t)rows;
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, s->level, Z_DEFLATED, -15, 8, s->strategy) != Z_OK) return NULL;
    size_t cap = deflateBound(&z, s->raw_len) + 64;
    uint8_t *out = malloc(cap);
    // Rows are packed 32 at a time so the scanline buffer stays in cache.
    enum { BATCH = 32 };
    uint8_t *scan = malloc(line * BATCH);
    if (!out || !scan) { free(out); free(scan); deflateEnd(&z); return NULL; }
    uLong adler = adler32(0L, Z_NULL, 0);
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int ok = 1;
    for (int y = s->row_from; y < s->row_to && ok; y += BATCH) {
        int n = s->row_to - y < BATCH ? s->row_to - y : BATCH;
        for (int k = 0; k < n; k++) pack_row(s->bgrx + (size_t)(y + k) * s->width * 4, s->width, scan + line * k);
        adler = adler32(adler, scan, (uInt)(line * n));
        z.next_in = scan;
        z.avail_in = (uInt)(line * n);
        int end = y + n >= s->row_to;
        int flush = end ? (s->last ? Z_FINISH : Z_SYNC_FLUSH) : Z_NO_FLUSH;
        int rc = deflate(&z, flush);
        ok = z.avail_in == 0 && (flush == Z_FINISH ? rc == Z_STREAM_END : (rc == Z_OK || rc == Z_BUF_ERROR));
    }
    free(scan);
    deflateEnd(&z);
    if (!ok) { free(out); return NULL; }
    s->out = out;
    s->out_len = cap - z.avail_out;
    s->adler = adler;
    s->rc = 0;
    return NULL;
}

static void put32(uint8_t *p, uint32_t v) { p[0] = v >> 24; p[1] = (v >> 16) & 255; p[2] = (v >> 8) & 255; p[3] = v & 255; }

/// Appends a chunk (length, type, data, CRC) at *p and advances it.
static void put_chunk(uint8_t **p, const char *type, const uint8_t *data, size_t len) {
    uint8_t *q = *p;
    put32(q, (uint32_t)len);
    memcpy(q + 4, type, 4);
    if (len) memcpy(q + 8, data, len);
    uLong crc = crc32(0L, q + 4, (uInt)(len + 4));
    put32(q + 8 + len, (uint32_t)crc);
    *p = q + 12 + len;
}

int xclaw_png_encode_bgrx_fast(const uint8_t *bgrx, int width, int height, int level, int strategy, int threads,
                               uint8_t **out, size_t *out_len, char *err, size_t err_len) {
    if (width <= 0 || height <= 0) { snprintf(err, err_len, "empty image"); return -1; }
    // One IDAT chunk holds at most 2^31-1 bytes and zlib counts in 32 bits: stay well inside both.
    if ((uint64_t)width * 3 + 1 > ((uint64_t)1 << 30) / (uint64_t)height) {
        snprintf(err, err_len, "image too large for one PNG (%dx%d)", width, height);
        return -1;
    }
    if (threads < 1) threads = 1;
    if (threads > 16) threads = 16;
    if (height < threads * 16) threads = 1;  // tiny images: not worth a thread
    stripe_t stripes[16];
    pthread_t ids[16];
    int started[16] = { 0 };
    for (int t = 0; t < threads; t++) {
        stripes[t] = (stripe_t){ .bgrx = bgrx, .width = width, .row_from = height * t / threads,
                                 .row_to = height * (t + 1) / threads, .level = level, .strategy = strategy,
                                 .last = t == threads - 1 };
    }
    for (int t = 1; t < threads; t++) started[t] = pthread_create(&ids[t], NULL, deflate_stripe, &stripes[t]) == 0;
    deflate_stripe(&stripes[0]);
    for (int t = 1; t < threads; t++) {
        if (started[t]) pthread_join(ids[t], NULL); else deflate_stripe(&stripes[t]);
    }
    int rc = 0;
    size_t idat = 2 + 4;  // zlib header + Adler-32
    uLong adler = adler32(0L, Z_NULL, 0);
    for (int t = 0; t < threads; t++) {
        if (stripes[t].rc != 0) rc = -1;
        idat += stripes[t].out_len;
        adler = adler32_combine(adler, stripes[t].adler, (z_off_t)stripes[t].raw_len);
    }
    uint8_t *png = rc == 0 ? malloc(8 + 25 + 12 + idat + 12) : NULL;
    uint8_t *body = rc == 0 ? malloc(idat) : NULL;
    if (!png || !body) {
        free(png); free(body);
        for (int t = 0; t < threads; t++) free(stripes[t].out);
        snprintf(err, err_len, rc ? "deflate failed" : "out of memory");
        return -1;
    }
    // zlib header: deflate, 32 KiB window, "fastest" level hint; (0x78 << 8 | 0x01) % 31 == 0.
    body[0] = 0x78; body[1] = 0x01;
    size_t at = 2;
    for (int t = 0; t < threads; t++) {
        memcpy(body + at, stripes[t].out, stripes[t].out_len);
        at += stripes[t].out_len;
        free(stripes[t].out);
    }
    put32(body + at, (uint32_t)adler);
    static const uint8_t signature[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    uint8_t ihdr[13];
    put32(ihdr, (uint32_t)width);
    put32(ihdr + 4, (uint32_t)height);
    ihdr[8] = 8; ihdr[9] = 2; ihdr[10] = 0; ihdr[11] = 0; ihdr[12] = 0;  // 8-bit RGB, deflate, no filter method, no interlace
    uint8_t *p = png;
    memcpy(p, signature, 8);
    p += 8;
    put_chunk(&p, "IHDR", ihdr, 13);
    put_chunk(&p, "IDAT", body, idat);
    put_chunk(&p, "IEND", NULL, 0);
    free(body);
    *out = png;
    *out_len = (size_t)(p - png);
    return 0;
}
