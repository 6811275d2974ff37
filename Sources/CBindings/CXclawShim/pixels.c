#include "xclaw_shim.h"
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

static int mask_shift(unsigned long m) { int s = 0; if (!m) return 0; while (!(m & 1)) { m >>= 1; s++; } return s; }
static int mask_bits(unsigned long m) { int b = 0; while (m) { b += (int)(m & 1); m >>= 1; } return b; }

static uint8_t scale_channel(uint32_t v, int bits) {
    if (bits >= 8) return (uint8_t)(v >> (bits - 8));
    uint32_t max = (1u << bits) - 1;
    return (uint8_t)((v * 255 + max / 2) / max);
}

int xclaw_ximage_to_bgrx(const uint8_t *src, int width, int height, int bytes_per_line, int bits_per_pixel,
                         int msb_first, unsigned long red_mask, unsigned long green_mask, unsigned long blue_mask,
                         uint8_t *dst) {
    if (width <= 0 || height <= 0) return -1;
    size_t row = (size_t)width * 4;
    if (bits_per_pixel == 32 && !msb_first && red_mask == 0xff0000 && green_mask == 0xff00 && blue_mask == 0xff) {
        // The X byte is copied as it is: it is padding that no consumer reads.
        if ((size_t)bytes_per_line == row) { memcpy(dst, src, row * (size_t)height); return 0; }
        for (int y = 0; y < height; y++) memcpy(dst + (size_t)y * row, src + (size_t)y * bytes_per_line, row);
        return 0;
    }
    if (bits_per_pixel != 16 && bits_per_pixel != 24 && bits_per_pixel != 32) return -1;
    if (!red_mask || !green_mask || !blue_mask) return -1;
    int rs = mask_shift(red_mask), gs = mask_shift(green_mask), bs = mask_shift(blue_mask);
    int rb = mask_bits(red_mask), gb = mask_bits(green_mask), bb = mask_bits(blue_mask);
    int bytes = bits_per_pixel / 8;
    for (int y = 0; y < height; y++) {
        const uint8_t *s = src + (size_t)y * bytes_per_line;
        uint8_t *d = dst + (size_t)y * row;
        for (int x = 0; x < width; x++, s += bytes, d += 4) {
            uint32_t p = 0;
            for (int k = 0; k < bytes; k++) p |= (uint32_t)s[msb_first ? bytes - 1 - k : k] << (8 * k);
            d[0] = scale_channel((p & blue_mask) >> bs, bb);
            d[1] = scale_channel((p & green_mask) >> gs, gb);
            d[2] = scale_channel((p & red_mask) >> rs, rb);
            d[3] = 0;
        }
    }
    return 0;
}

void xclaw_bgrx_to_rgb(const uint8_t *src, size_t pixels, uint8_t *dst) {
    for (size_t i = 0; i < pixels; i++, src += 4, dst += 3) { dst[0] = src[2]; dst[1] = src[1]; dst[2] = src[0]; }
}

void xclaw_bgrx_to_rgba(const uint8_t *src, size_t pixels, uint8_t *dst) {
    for (size_t i = 0; i < pixels; i++, src += 4, dst += 4) {
        dst[0] = src[2]; dst[1] = src[1]; dst[2] = src[0]; dst[3] = 255;
    }
}

/// For each destination index, the source span it covers and the weight of each source index in it, in 8.8 fixed
/// point: source pixel i covers [i*dn, (i+1)*dn) and destination pixel j covers [j*sn, (j+1)*sn) on a common axis,
/// each weight is the difference of the rounded running sums of the exact integer overlaps, so weights are never
/// negative and always sum to 256 whatever the ratio.
typedef struct { int first, count; uint16_t *weights; } span_t;

static span_t *make_spans(int sn, int dn, uint16_t **storage) {
    span_t *spans = malloc(sizeof(span_t) * (size_t)dn);
    uint16_t *w = malloc(sizeof(uint16_t) * ((size_t)dn + (size_t)sn + 2));
    if (!spans || !w) { free(spans); free(w); return NULL; }
    *storage = w;
    for (int j = 0; j < dn; j++) {
        uint64_t lo = (uint64_t)j * sn, hi = (uint64_t)(j + 1) * sn;
        int first = (int)(lo / dn), last = (int)((hi - 1) / dn);
        spans[j].first = first; spans[j].count = last - first + 1; spans[j].weights = w;
        uint64_t covered = 0, previous = 0;
        for (int i = first; i <= last; i++) {
            uint64_t a = (uint64_t)i * dn, b = (uint64_t)(i + 1) * dn;
            uint64_t s = a > lo ? a : lo, e = b < hi ? b : hi;
            covered += e - s;
            uint64_t running = (covered * 256 + (uint64_t)sn / 2) / (uint64_t)sn;
            w[i - first] = (uint16_t)(running - previous);
            previous = running;
        }
        w += spans[j].count;
    }
    return spans;
}

typedef uint32_t v4u32 __attribute__((vector_size(16)));

typedef struct {
    const uint8_t *src; int sw; uint8_t *dst; int dw;
    const span_t *hs, *vs; int row_from, row_to; int rc;
} scale_job_t;

/// Scales output rows [row_from, row_to): a vertical pass into 16-bit sums (255 * 256 fits), then a horizontal pass
/// on four channels at once.
static void *scale_rows(void *arg) {
    scale_job_t *job = arg;
    size_t n = (size_t)job->sw * 4;
    uint16_t *col = malloc(sizeof(uint16_t) * n);
    if (!col) { job->rc = -1; return NULL; }
    for (int j = job->row_from; j < job->row_to; j++) {
        const span_t *v = &job->vs[j];
        const uint8_t *r0 = job->src + (size_t)v->first * n;
        uint16_t w0 = v->weights[0];
        for (size_t i = 0; i < n; i++) col[i] = (uint16_t)(r0[i] * w0);
        for (int k = 1; k < v->count; k++) {
            const uint8_t *r = job->src + (size_t)(v->first + k) * n;
            uint16_t wk = v->weights[k];
            for (size_t i = 0; i < n; i++) col[i] = (uint16_t)(col[i] + r[i] * wk);
        }
        uint8_t *out = job->dst + (size_t)j * job->dw * 4;
        for (int x = 0; x < job->dw; x++) {
            const span_t *h = &job->hs[x];
            const uint16_t *c = col + (size_t)h->first * 4;
            v4u32 acc = { 1u << 15, 1u << 15, 1u << 15, 1u << 15 };  // rounds to nearest
            for (int k = 0; k < h->count; k++, c += 4) {
                v4u32 px = { c[0], c[1], c[2], c[3] };
                acc += px * h->weights[k];
            }
            out[x * 4 + 0] = (uint8_t)(acc[0] >> 16);
            out[x * 4 + 1] = (uint8_t)(acc[1] >> 16);
            out[x * 4 + 2] = (uint8_t)(acc[2] >> 16);
            out[x * 4 + 3] = 0;
        }
    }
    free(col);
    return NULL;
}

int xclaw_downscale_bgrx(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh) {
    if (sw <= 0 || sh <= 0 || dw <= 0 || dh <= 0 || dw > sw || dh > sh) return -1;
    uint16_t *hw = NULL, *vw = NULL;
    span_t *hs = make_spans(sw, dw, &hw), *vs = make_spans(sh, dh, &vw);
    int rc = -1;
    if (hs && vs) {
        // Two halves on two threads when the image is big enough to repay a thread start (~30 µs).
        int parts = (long)dw * dh >= 65536 ? 2 : 1;
        scale_job_t jobs[2];
        pthread_t thread;
        int threaded = 0;
        for (int p = 0; p < parts; p++)
            jobs[p] = (scale_job_t){ src, sw, dst, dw, hs, vs, dh * p / parts, dh * (p + 1) / parts, 0 };
        if (parts == 2) threaded = pthread_create(&thread, NULL, scale_rows, &jobs[1]) == 0;
        scale_rows(&jobs[0]);
        if (parts == 2) { if (threaded) pthread_join(thread, NULL); else scale_rows(&jobs[1]); }
        rc = jobs[0].rc | (parts == 2 ? jobs[1].rc : 0);
    }
    free(hs); free(vs); free(hw); free(vw);
    return rc;
}

void xclaw_free(void *p) { free(p); }

XIC xclaw_create_ic(XIM im, Window window) {
    return XCreateIC(im, XNInputStyle, XIMPreeditNothing | XIMStatusNothing, XNClientWindow, window,
                     XNFocusWindow, window, NULL);
}
