// Control boxes for per-control reading: the interiors of buttons, keys, tabs and rows, found as regions of one fill
// (neighbours within a tolerance, so gradients count) that frame their own bounding box. A label in such a box is read
// on its own, in the segmentation mode its size calls for, instead of as part of a page. Pure function over a
// caller-owned buffer.
#include "xclaw_shim.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
    int x0, y0, x1, y1;  // inclusive bounds
    long count;
    long sum;
} Region;

/// How much of a horizontal or vertical segment lies between the first and last pixels carrying `label`, in percent:
/// a row through a button's label still spans the button, while a row through a blob or a glyph's counter does not.
static int extent(const int32_t *labels, int w, int label, int x0, int y0, int x1, int y1) {
    int first = -1, last = -1, i = 0, total = 0;
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++, i++) {
            total++;
            if (labels[(size_t)y * w + x] == label) {
                if (first < 0) first = i;
                last = i;
            }
        }
    return total && first >= 0 ? (last - first + 1) * 100 / total : 0;
}

int xclaw_control_boxes(const uint8_t *gray, int w, int h, int tolerance, int min_w, int min_h, int max_w, int max_h,
                        int *out, int max) {
    if (!gray || w <= 2 || h <= 2 || !out || max < 0) return -1;
    size_t n = (size_t)w * (size_t)h;
    int32_t *labels = malloc(n * sizeof(int32_t));
    int32_t *stack = malloc(n * sizeof(int32_t));
    if (!labels || !stack) { free(labels); free(stack); return -1; }
    memset(labels, 0, n * sizeof(int32_t));
    int found = 0, next = 1;
    for (size_t start = 0; start < n; start++) {
        if (labels[start]) continue;
        int label = next++;
        Region r = { (int)(start % w), (int)(start / w), (int)(start % w), (int)(start / w), 0, 0 };
        size_t top = 0;
        stack[top++] = (int32_t)start;
        labels[start] = label;
        while (top) {
            int32_t p = stack[--top];
            int x = p % w, y = p / w, v = gray[p];
            r.count++;
            r.sum += v;
            if (x < r.x0) r.x0 = x;
            if (x > r.x1) r.x1 = x;
            if (y < r.y0) r.y0 = y;
            if (y > r.y1) r.y1 = y;
            // 4-connected growth: a neighbour joins when it is within the tolerance of this pixel, so a gradient
            // fill is one region while an outline or a glyph stroke (a jump) is not.
            int32_t nb[4] = { x > 0 ? p - 1 : -1, x + 1 < w ? p + 1 : -1, y > 0 ? p - w : -1, y + 1 < h ? p + w : -1 };
            for (int k = 0; k < 4; k++) {
                int32_t q = nb[k];
                if (q < 0 || labels[q]) continue;
                if (abs(gray[q] - v) > tolerance) continue;
                labels[q] = label;
                stack[top++] = q;
            }
        }
        int bw = r.x1 - r.x0 + 1, bh = r.y1 - r.y0 + 1;
        // A control's interior: inside the image (a region reaching the edge is a window's background), of a
        // control's size, mostly fill (its label covers less than half), and framing its bounding box on all four
        // sides, so a blob is not one.
        if (bw < min_w || bh < min_h || bw > max_w || bh > max_h) continue;
        if (r.x0 == 0 || r.y0 == 0 || r.x1 == w - 1 || r.y1 == h - 1) continue;
        if (r.count * 100 < (long)bw * bh * 45) continue;
        // Tested a quarter of the shorter side in from each edge, so rounded and pill-shaped buttons (xmessage's,
        // GTK's) count as well as square ones.
        int d = ((bw < bh ? bw : bh) + 2) / 4;
        if (extent(labels, w, label, r.x0, r.y0 + d, r.x1, r.y0 + d) < 75) continue;
        if (extent(labels, w, label, r.x0, r.y1 - d, r.x1, r.y1 - d) < 75) continue;
        if (extent(labels, w, label, r.x0 + d, r.y0, r.x0 + d, r.y1) < 75) continue;
        if (extent(labels, w, label, r.x1 - d, r.y0, r.x1 - d, r.y1) < 75) continue;
        // The label: whatever in the box is not fill. Its bounding box, and how many bands of rows it forms (one
        // for a label; more for a multi-line area).
        int ix0 = w, iy0 = h, ix1 = -1, iy1 = -1, bands = 0, last_ink_row = -10, band_top = 0;
        for (int y = r.y0; y <= r.y1; y++) {
            int row_ink = 0;
            const int32_t *row = labels + (size_t)y * w;
            // Only what lies between the fill's first and last pixel of the row: a rounded button's corners are
            // outside it, not part of its label.
            int first = r.x0, last = r.x1;
            while (first <= r.x1 && row[first] != label) first++;
            while (last >= r.x0 && row[last] != label) last--;
            for (int x = first; x <= last; x++) {
                if (row[x] == label) continue;
                row_ink = 1;
                if (x < ix0) ix0 = x;
                if (x > ix1) ix1 = x;
            }
            if (!row_ink) continue;
            if (y > last_ink_row + 2) {
                // A band of text is at least 4 rows tall; thinner ones are strokes of one glyph ("=", "÷").
                if (last_ink_row >= 0 && last_ink_row - band_top >= 3) bands++;
                band_top = y;
            }
            last_ink_row = y;
            if (y < iy0) iy0 = y;
            iy1 = y;
        }
        if (ix1 >= 0 && last_ink_row - band_top >= 3) bands++;
        if (found < max) {
            int *o = out + (size_t)found * 10;
            o[0] = r.x0; o[1] = r.y0; o[2] = bw; o[3] = bh;
            if (ix1 >= 0) { o[4] = ix0; o[5] = iy0; o[6] = ix1 - ix0 + 1; o[7] = iy1 - iy0 + 1; }
            else { o[4] = o[5] = o[6] = o[7] = 0; }
            o[8] = (int)(r.sum / r.count);
            o[9] = bands;
        }
        found++;
    }
    free(labels);
    free(stack);
    return found;
}

void xclaw_upscale_label(const uint8_t *src, int w, int h, int scale, int thicken, uint8_t *dst) {
    // Bitmap fonts draw 1-px strokes, which tesseract misreads once upscaled ("x!" as "|", "CE/C" as "CEC"): a stroke
    // is first widened by a pixel (dark text: each pixel takes the darker of itself and its left neighbour), then the
    // image is upscaled by pixel replication and softened with one 3x3 binomial pass, so edges are smooth but strokes
    // stay solid.
    int dw = w * scale, dh = h * scale;
    uint8_t *tmp = malloc((size_t)dw * (size_t)dh);
    if (!tmp) { memset(dst, 255, (size_t)dw * (size_t)dh); return; }
    for (int y = 0; y < dh; y++) {
        const uint8_t *row = src + (size_t)(y / scale) * w;
        for (int x = 0; x < dw; x++) {
            int sx = x / scale, v = row[sx];
            if (thicken && sx > 0 && row[sx - 1] < v) v = row[sx - 1];
            tmp[(size_t)y * dw + x] = (uint8_t)v;
        }
    }
    for (int y = 0; y < dh; y++) {
        int y0 = y > 0 ? y - 1 : y, y1 = y + 1 < dh ? y + 1 : y;
        for (int x = 0; x < dw; x++) {
            int x0 = x > 0 ? x - 1 : x, x1 = x + 1 < dw ? x + 1 : x;
            const uint8_t *a = tmp + (size_t)y0 * dw, *b = tmp + (size_t)y * dw, *c = tmp + (size_t)y1 * dw;
            int s = a[x0] + 2 * a[x] + a[x1] + 2 * (b[x0] + 2 * b[x] + b[x1]) + c[x0] + 2 * c[x] + c[x1];
            dst[(size_t)y * dw + x] = (uint8_t)((s + 8) >> 4);
        }
    }
    free(tmp);
}
