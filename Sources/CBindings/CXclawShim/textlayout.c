// Kernels for OCR: gray conversion, content hashing, text-block layout (XY-cut over an ink map with ruling lines
// removed), and block preparation (crop, invert, integer upscale). Pure functions over caller-owned buffers.
#include "xclaw_shim.h"
#include <stdlib.h>
#include <string.h>

void xclaw_bgrx_to_gray(const uint8_t *bgrx, int stride_px, int x, int y, int w, int h, uint8_t *dst) {
    for (int r = 0; r < h; r++) {
        const uint8_t *s = bgrx + ((size_t)(y + r) * (size_t)stride_px + (size_t)x) * 4;
        uint8_t *d = dst + (size_t)r * (size_t)w;
        for (int c = 0; c < w; c++, s += 4) d[c] = (uint8_t)((s[2] * 77 + s[1] * 150 + s[0] * 29) >> 8);
    }
}

uint64_t xclaw_hash_gray(const uint8_t *gray, int stride, int x, int y, int w, int h) {
    // 64-bit multiply-xorshift over 8-byte words of each row, seeded with the size so equal pixels in a
    // different shape hash differently. Not cryptographic: a cache key for identical screen content.
    uint64_t hash = 0x9E3779B97F4A7C15ull ^ ((uint64_t)w << 32) ^ (uint64_t)h;
    const uint64_t k = 0xff51afd7ed558ccdull;
    for (int r = 0; r < h; r++) {
        const uint8_t *row = gray + (size_t)(y + r) * (size_t)stride + (size_t)x;
        int c = 0;
        for (; c + 8 <= w; c += 8) {
            uint64_t v; memcpy(&v, row + c, 8);
            hash = (hash ^ v) * k; hash ^= hash >> 29;
        }
        uint64_t tail = 0;
        for (int t = 0; c < w; c++, t++) tail |= (uint64_t)row[c] << (8 * t);
        hash = (hash ^ tail ^ ((uint64_t)r << 48)) * k; hash ^= hash >> 31;
    }
    return hash;
}

/// Marks ink: a pixel that differs from its left or upper neighbour by more than `threshold`.
static void ink_map(const uint8_t *g, int w, int h, int threshold, uint8_t *ink) {
    memset(ink, 0, (size_t)w * (size_t)h);
    for (int y = 0; y < h; y++) {
        const uint8_t *row = g + (size_t)y * w, *up = y ? row - w : row;
        uint8_t *out = ink + (size_t)y * w;
        for (int x = 0; x < w; x++) {
            int dl = x ? abs(row[x] - row[x - 1]) : 0;
            int du = abs(row[x] - up[x]);
            out[x] = (dl > threshold || du > threshold);
        }
    }
}

/// Clears ink that belongs to long straight runs (window borders, separators, box outlines): text strokes are short,
/// and ruling lines would otherwise join everything they cross into one block. With `gray`, also paints the rules
/// out of the image (a vertical rule takes the colour on its left, a horizontal one the colour above), so a border
/// next to text is not read as "l" or "|".
static void remove_rules(uint8_t *ink, uint8_t *gray, int w, int h, int max_h_run, int max_v_run) {
    uint8_t *mark = calloc((size_t)w * (size_t)h, 1);
    if (!mark) return;
    for (int y = 0; y < h; y++) {
        uint8_t *row = ink + (size_t)y * w;
        int x = 0;
        while (x < w) {
            if (!row[x]) { x++; continue; }
            int s = x;
            while (x < w && row[x]) x++;
            if (x - s >= max_h_run) memset(mark + (size_t)y * w + s, 1, (size_t)(x - s));
        }
    }
    for (int x = 0; x < w; x++) {
        int y = 0;
        while (y < h) {
            if (!ink[(size_t)y * w + x]) { y++; continue; }
            int s = y;
            while (y < h && ink[(size_t)y * w + x]) y++;
            if (y - s >= max_v_run) for (int k = s; k < y; k++) mark[(size_t)k * w + x] |= 2;
        }
    }
    for (int y = 0; y < h; y++) for (int x = 0; x < w; x++) {
        size_t i = (size_t)y * w + x;
        if (!mark[i]) continue;
        ink[i] = 0;
        if (!gray) continue;
        if ((mark[i] & 2) && x > 0) gray[i] = gray[i - 1];
        else if (y > 0) gray[i] = gray[i - (size_t)w];
    }
    free(mark);
}

typedef struct { int x, y, w, h; } rect_t;
typedef struct { const uint8_t *ink; int stride; int *out; int count, max; int *prof; } cut_ctx;

/// Shrinks `r` to the bounding box of its ink; returns 0 when it holds none.
static int trim(const cut_ctx *c, rect_t *r) {
    int x0 = r->x + r->w, x1 = r->x - 1, y0 = r->y + r->h, y1 = r->y - 1;
    for (int y = r->y; y < r->y + r->h; y++) {
        const uint8_t *row = c->ink + (size_t)y * c->stride;
        for (int x = r->x; x < r->x + r->w; x++) if (row[x]) {
            if (x < x0) x0 = x;
            if (x > x1) x1 = x;
            if (y < y0) y0 = y;
            y1 = y;
        }
    }
    if (x1 < x0) return 0;
    r->x = x0; r->y = y0; r->w = x1 - x0 + 1; r->h = y1 - y0 + 1;
    return 1;
}

static void emit(cut_ctx *c, rect_t r) {
    if (r.w < 3 || r.h < 4) return;  // specks
    if (c->count < c->max) {
        int *o = c->out + 4 * c->count;
        o[0] = r.x; o[1] = r.y; o[2] = r.w; o[3] = r.h;
    }
    c->count++;
}

/// Recursive XY-cut: split at runs of ink-free rows (any height), then at runs of ink-free columns wide enough to be
/// more than a word space for the text height; a rectangle that splits neither way is a block.
static void cut(cut_ctx *c, rect_t r, int depth) {
    if (!trim(c, &r)) return;
    if (depth > 24) { emit(c, r); return; }
    int *prof = c->prof;
    // Rows.
    for (int y = 0; y < r.h; y++) {
        const uint8_t *row = c->ink + (size_t)(r.y + y) * c->stride + r.x;
        int n = 0;
        for (int x = 0; x < r.w; x++) n += row[x];
        prof[y] = n;
    }
    // Lines of small fonts often touch (a descender meets the ascender below): no row is empty. In a tall block,
    // rows with under 5 % of the fullest row's ink are such contacts; cut there too, unless that would leave a piece
    // too short to be a line (then it was the top of one tall line, not a contact).
    uint8_t *blank = malloc((size_t)r.h);
    if (!blank) { emit(c, r); return; }
    int maxp = 0;
    for (int y = 0; y < r.h; y++) if (prof[y] > maxp) maxp = prof[y];
    int low = maxp / 20;
    int use_valleys = r.h >= 20 && low >= 1;
    for (int pass = 0; pass < 2; pass++) {
        for (int y = 0; y < r.h; y++) blank[y] = prof[y] == 0 || (use_valleys && prof[y] <= low);
        if (!use_valleys) break;
        // A valley is a band of low rows: the descenders of one line and the ascenders of the next. Cut it at one
        // row, not along its whole height, or both lines lose those strokes ("g" read as "a"): at its empty rows if
        // it has any, else at its emptiest row (the lowest of equals, so descenders stay with their line). Bands at
        // the block's edge are the top or bottom of a line, not a contact.
        for (int y = 0; y < r.h;) {
            if (!blank[y]) { y++; continue; }
            int s = y;
            while (y < r.h && blank[y]) y++;
            int has_empty = 0, best = s;
            for (int k = s; k < y; k++) {
                if (prof[k] == 0) has_empty = 1;
                if (prof[k] <= prof[best]) best = k;
            }
            int inner = s > 0 && y < r.h;
            for (int k = s; k < y; k++) blank[k] = prof[k] == 0 || (inner && !has_empty && k == best);
        }
        int ok = 1, y = 0;
        while (y < r.h) {
            while (y < r.h && blank[y]) y++;
            int s = y;
            while (y < r.h && !blank[y]) y++;
            if (y > s && y - s < 6) ok = 0;
        }
        if (ok) break;
        use_valleys = 0;
    }
    int splits = 0;
    for (int y = 0; y < r.h; y++) if (blank[y]) { splits = 1; break; }
    if (splits) {
        int y = 0;
        while (y < r.h) {
            while (y < r.h && blank[y]) y++;
            int s = y;
            while (y < r.h && !blank[y]) y++;
            if (y > s) {
                rect_t band = { r.x, r.y + s, r.w, y - s };
                cut(c, band, depth + 1);
            }
        }
        free(blank);
        return;
    }
    free(blank);
    // Columns: a gap must be wider than a word space; spaces grow with the text height.
    int text_h = r.h < 48 ? r.h : 48;
    int min_gap = text_h * 3 / 2;
    if (min_gap < 10) min_gap = 10;
    for (int x = 0; x < r.w; x++) {
        int n = 0;
        for (int y = 0; y < r.h; y++) n += c->ink[(size_t)(r.y + y) * c->stride + r.x + x];
        prof[x] = n;
    }
    int start = 0, x = 0, found = 0;
    int *cuts = malloc(sizeof(int) * (size_t)(r.w + 1) * 2);
    if (!cuts) { emit(c, r); return; }
    int ncuts = 0;
    while (x < r.w) {
        if (prof[x]) { x++; continue; }
        int s = x;
        while (x < r.w && !prof[x]) x++;
        if (x - s >= min_gap && s > 0 && x < r.w) {
            cuts[2 * ncuts] = start; cuts[2 * ncuts + 1] = s - start; ncuts++;
            start = x; found = 1;
        }
    }
    if (!found) { free(cuts); emit(c, r); return; }
    cuts[2 * ncuts] = start; cuts[2 * ncuts + 1] = r.w - start; ncuts++;
    for (int i = 0; i < ncuts; i++) {
        rect_t part = { r.x + cuts[2 * i], r.y, cuts[2 * i + 1], r.h };
        cut(c, part, depth + 1);
    }
    free(cuts);
}

int xclaw_text_blocks(uint8_t *gray, int w, int h, int threshold, int clean, int *out, int max) {
    if (w <= 0 || h <= 0) return -1;
    uint8_t *ink = malloc((size_t)w * (size_t)h);
    int *prof = malloc(sizeof(int) * (size_t)(w > h ? w : h));
    if (!ink || !prof) { free(ink); free(prof); return -1; }
    ink_map(gray, w, h, threshold, ink);
    // Rules: horizontal runs of 40+ px, vertical of 20+ (a button's side). Letter strokes of fonts up to ~24 px are
    // shorter; the strokes of larger text are shifted a pixel by the painting, not erased.
    remove_rules(ink, clean ? gray : NULL, w, h, 40, 20);
    cut_ctx c = { ink, w, out, 0, max, prof };
    rect_t all = { 0, 0, w, h };
    cut(&c, all, 0);
    free(ink); free(prof);
    return c.count;
}

int xclaw_background_level(const uint8_t *gray, int stride, int x, int y, int w, int h) {
    // The most common level: text covers a minority of a block's pixels, whatever the theme.
    int hist[256] = {0};
    for (int r = 0; r < h; r++) {
        const uint8_t *row = gray + (size_t)(y + r) * (size_t)stride + (size_t)x;
        for (int c = 0; c < w; c++) hist[row[c]]++;
    }
    int best = 0;
    for (int i = 1; i < 256; i++) if (hist[i] > hist[best]) best = i;
    return best;
}

void xclaw_prepare_block(const uint8_t *gray, int stride, int x, int y, int w, int h, int ix, int iy, int iw, int ih,
                         int background, int scale, int invert, uint8_t *dst) {
    // Bilinear integer upscale (sample centres aligned), optional inversion. dst is (w*scale) x (h*scale). Pixels
    // outside the inner rectangle (relative to x,y) read as the background: the margin tesseract needs, without the
    // descenders of the line above or the ascenders of the line below.
    int dw = w * scale, dh = h * scale;
    #define PX(cx, cy) (((cx) >= ix && (cx) < ix + iw && (cy) >= iy && (cy) < iy + ih) \
                         ? gray[(size_t)(y + (cy)) * stride + x + (cx)] : background)
    for (int dy = 0; dy < dh; dy++) {
        int fy = (2 * dy + 1) * 256 / (2 * scale) - 128;  // source y in 8.8, relative to the block
        if (fy < 0) fy = 0;
        int y0 = fy >> 8, wy = fy & 255;
        if (y0 > h - 1) y0 = h - 1;
        int y1 = y0 + 1 < h ? y0 + 1 : h - 1;
        uint8_t *d = dst + (size_t)dy * dw;
        for (int dx = 0; dx < dw; dx++) {
            int fx = (2 * dx + 1) * 256 / (2 * scale) - 128;
            if (fx < 0) fx = 0;
            int x0 = fx >> 8, wx = fx & 255;
            if (x0 > w - 1) x0 = w - 1;
            int x1 = x0 + 1 < w ? x0 + 1 : w - 1;
            int top = PX(x0, y0) * (256 - wx) + PX(x1, y0) * wx;
            int bot = PX(x0, y1) * (256 - wx) + PX(x1, y1) * wx;
            int v = (top * (256 - wy) + bot * wy + (1 << 15)) >> 16;
            d[dx] = (uint8_t)(invert ? 255 - v : v);
        }
    }
    #undef PX
}
