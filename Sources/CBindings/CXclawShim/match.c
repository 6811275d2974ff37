// Template matching by normalised cross-correlation (OpenCV's TM_CCOEFF_NORMED), and PixelSearch.
//
// Exhaustive search scores every position exactly; the fast search scores exactly only where it cannot prove the
// score is below the threshold, so both report the same positions with the same (bit-identical) scores. The proofs
// are Cauchy-Schwarz bounds over a partition of the template into blocks: with t' the zero-mean template and w the
// window, projecting both onto the block-constant vectors gives
//     <t', w> <= sum_j T_j W_j / |B_j|  +  sqrt(within(t') * within(w))
// where T_j, W_j are block sums and within() is the energy left inside the blocks (for the window:
// sum w^2 - sum_j W_j^2 / |B_j|). Colour is scored jointly over the three channels; the bound works on the luma axis
// (R+G+B) and bounds the two chroma axes (orthogonal to it) by Cauchy-Schwarz as a whole, which costs little on the
// mostly grey screens of desktop UIs.
//   Stage 0, at every position that is not flat: stage 1's bound with its correlation term replaced by its largest
//   value (Cauchy-Schwarz on the block sums), from the window's energies alone.
//   Stage 1: blocks are one template row of one of 4 vertical stripes, so the block sums are horizontal box sums of
//   the image, and the bound is a dense sum the CPU does 8 (AVX2) positions at a time, on 64-position chunks that
//   stage 0 left anything in.
//   Stage 2, where stage 1 could not prune: blocks are one column of one of 4 horizontal bands.
//   Stage 3: the exact score, in exact integer sums.
// Image rows stream through rings of the template's height, with running column sums, so a search allocates
// nothing the size of the image.
#include "xclaw_shim.h"
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

// Loops that vectorise get an AVX2 copy, chosen at run time where the CPU has it.
#if defined(XCLAW_NO_CLONES)
#define CLONES
#elif defined(__x86_64__) && defined(__clang__)
#define CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define CLONES
#endif

#define STRIPES 4
#define BANDS 4

typedef struct {
    // The image, BGRX.
    const uint8_t *img; int iw, ih;
    // The template.
    const uint8_t *tpl; int tw, th; int n;
    const uint8_t *gray_tpl;
    int gray;
    double threshold;
    // Exact-score constants: per channel sum and sum of squares; n * energy.
    int64_t st[3], st2[3]; int64_t et_n;
    int channels;
    // Bound constants.
    double et, etv, etc;  // template energy: total, on the bound's axis (in its units), chroma (colour only)
    double axis;          // 3 for luma R+G+B (its unit vector is (1,1,1)/sqrt 3), 1 for grey
    int stripes, bands;   // how many of each (fewer when the template is narrower or lower than 4)
    int sx[STRIPES + 1];  // stripe edges
    float *coef1;         // STRIPES * th block means of the zero-mean template, stripe-major
    double wt1, err1;     // template energy inside stage-1 blocks; bound on stage 1's float rounding
    int width_of[STRIPES];  // index of each stripe's width in widths[]
    int widths[2]; int nwidths;
    int centre;           // value subtracted per pixel before the float sums
    int by[BANDS + 1];    // band edges
    double *coef2;        // BANDS * tw block means
    double wt1_between;   // template energy between stage-1 blocks
    double wt2;
    // Output.
    xclaw_match_hit *hits; int max_hits;
    pthread_mutex_t lock;
    int count;
    xclaw_match_hit best;
    long stage1, stage2, exact;
    int failed;
} match_ctx;

/// A pixel's grey level, as xclaw_bgrx_to_gray makes it.
static inline int grey(const uint8_t *p) { return (p[2] * 77 + p[1] * 150 + p[0] * 29) >> 8; }

/// The exact score at (x, y), from exact integer sums: the same expression in the fast and the exhaustive search.
CLONES static double exact_score(const match_ctx *c, int x, int y) {
    int64_t si[3] = { 0, 0, 0 }, si2[3] = { 0, 0, 0 }, sti[3] = { 0, 0, 0 };
    int n = c->n;
    if (c->gray) {
        for (int j = 0; j < c->th; j++) {
            const uint8_t *r = c->img + ((size_t)(y + j) * c->iw + x) * 4, *t = c->gray_tpl + (size_t)j * c->tw;
            int32_t a = 0, b = 0, d = 0;  // a row: 255 * 255 * tw fits for tw < 33000
            for (int i = 0; i < c->tw; i++) { int p = grey(r + i * 4); a += p; b += p * p; d += p * t[i]; }
            si[0] += a; si2[0] += b; sti[0] += d;
        }
    } else {
        for (int j = 0; j < c->th; j++) {
            const uint8_t *r = c->img + ((size_t)(y + j) * c->iw + x) * 4, *t = c->tpl + (size_t)j * c->tw * 4;
            for (int ch = 0; ch < 3; ch++) {
                int32_t a = 0, b = 0, d = 0;
                for (int i = 0; i < c->tw; i++) { int p = r[i * 4 + ch]; a += p; b += p * p; d += p * t[i * 4 + ch]; }
                si[ch] += a; si2[ch] += b; sti[ch] += d;
            }
        }
    }
    int64_t num = 0, ew = 0;
    for (int ch = 0; ch < c->channels; ch++) {
        num += (int64_t)n * sti[ch] - c->st[ch] * si[ch];
        ew += (int64_t)n * si2[ch] - si[ch] * si[ch];
    }
    if (ew <= 0) return 0;  // a flat window correlates with nothing (OpenCV says 0 too)
    return (double)num / sqrt((double)c->et_n * (double)ew);
}

/// Whether a is better than b: a higher score, or the same score earlier in reading order.
static int better(xclaw_match_hit a, xclaw_match_hit b) {
    return a.score > b.score || (a.score == b.score && (a.y < b.y || (a.y == b.y && a.x < b.x)));
}

static void record(match_ctx *c, xclaw_match_hit *local, int *nlocal, xclaw_match_hit *best, int x, int y, double s) {
    xclaw_match_hit hit = { x, y, s };
    if (better(hit, *best)) *best = hit;
    if (s < c->threshold) return;
    local[(*nlocal)++] = (xclaw_match_hit){ x, y, s };
    if (*nlocal == 256) {
        pthread_mutex_lock(&c->lock);
        for (int k = 0; k < *nlocal; k++, c->count++)
            if (c->count < c->max_hits) c->hits[c->count] = local[k];
        pthread_mutex_unlock(&c->lock);
        *nlocal = 0;
    }
}

static void flush(match_ctx *c, xclaw_match_hit *local, int nlocal, xclaw_match_hit best, long s1, long s2, long ex) {
    pthread_mutex_lock(&c->lock);
    if (better(best, c->best)) c->best = best;
    for (int k = 0; k < nlocal; k++, c->count++)
        if (c->count < c->max_hits) c->hits[c->count] = local[k];
    c->stage1 += s1; c->stage2 += s2; c->exact += ex;
    pthread_mutex_unlock(&c->lock);
}

/// Stage 1's dense sums for positions [x0, x0 + len) of a row: acc[x] = sum_k coef[k] * rows[k][x].
static void dense_generic(float *acc, int x0, int len, const float *const *rows, const float *coef, int m) {
    for (int x = x0; x < x0 + len; x++) acc[x] = 0;
    for (int k = 0; k < m; k++) {
        const float *p = rows[k]; float t = coef[k];
        for (int x = x0; x < x0 + len; x++) acc[x] += t * p[x];
    }
}

#if defined(__x86_64__)
/// The same, 64 positions at a time in eight AVX2 accumulators (FMA's latency is hidden by eight chains).
__attribute__((target("avx2,fma")))
static void dense_avx2(float *acc, int x0, int len, const float *const *rows, const float *coef, int m) {
    int x = x0, end = x0 + len;
    for (; x + 64 <= end; x += 64) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        for (int k = 0; k < m; k++) {
            const float *p = rows[k] + x;
            __m256 t = _mm256_set1_ps(coef[k]);
            a0 = _mm256_fmadd_ps(t, _mm256_loadu_ps(p), a0);
            a1 = _mm256_fmadd_ps(t, _mm256_loadu_ps(p + 8), a1);
            a2 = _mm256_fmadd_ps(t, _mm256_loadu_ps(p + 16), a2);
            a3 = _mm256_fmadd_ps(t, _mm256_loadu_ps(p + 24), a3);
            a4 = _mm256_fmadd_ps(t, _mm256_loadu_ps(p + 32), a4);
            a5 = _mm256_fmadd_ps(t, _mm256_loadu_ps(p + 40), a5);
            a6 = _mm256_fmadd_ps(t, _mm256_loadu_ps(p + 48), a6);
            a7 = _mm256_fmadd_ps(t, _mm256_loadu_ps(p + 56), a7);
        }
        _mm256_storeu_ps(acc + x, a0); _mm256_storeu_ps(acc + x + 8, a1);
        _mm256_storeu_ps(acc + x + 16, a2); _mm256_storeu_ps(acc + x + 24, a3);
        _mm256_storeu_ps(acc + x + 32, a4); _mm256_storeu_ps(acc + x + 40, a5);
        _mm256_storeu_ps(acc + x + 48, a6); _mm256_storeu_ps(acc + x + 56, a7);
    }
    for (; x + 8 <= end; x += 8) {
        __m256 a0 = _mm256_setzero_ps();
        for (int k = 0; k < m; k++) a0 = _mm256_fmadd_ps(_mm256_set1_ps(coef[k]), _mm256_loadu_ps(rows[k] + x), a0);
        _mm256_storeu_ps(acc + x, a0);
    }
    for (; x < end; x++) {
        float a = 0;
        for (int k = 0; k < m; k++) a = fmaf(coef[k], rows[k][x], a);
        acc[x] = a;
    }
}
static int have_avx2(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
#endif

/// Stage 2's sums over one band: sum coef[i] * W_i and (into *squares) sum W_i^2, W_i the band's column sums.
CLONES static double band_dot(const double *coef, const int32_t *sums, int n, double *squares) {
    double a0 = 0, a1 = 0, a2 = 0, a3 = 0, q0 = 0, q1 = 0, q2 = 0, q3 = 0;
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        double w0 = sums[i], w1 = sums[i + 1], w2 = sums[i + 2], w3 = sums[i + 3];
        a0 += coef[i] * w0; a1 += coef[i + 1] * w1; a2 += coef[i + 2] * w2; a3 += coef[i + 3] * w3;
        q0 += w0 * w0; q1 += w1 * w1; q2 += w2 * w2; q3 += w3 * w3;
    }
    for (; i < n; i++) { double w = sums[i]; a0 += coef[i] * w; q0 += w * w; }
    *squares = (q0 + q1) + (q2 + q3);
    return (a0 + a1) + (a2 + a3);
}

typedef struct { match_ctx *c; int y0, y1; int exhaustive; } match_job;

/// The fast search over rows [y0, y1) of positions.
CLONES static void *search_rows(void *arg) {
    match_job *job = arg;
    match_ctx *c = job->c;
    int iw = c->iw, tw = c->tw, th = c->th, px = c->iw - c->tw + 1, n = c->n;
    xclaw_match_hit local[256], best = { -1, -1, -2 };
    int nlocal = 0;
    long s1 = 0, s2 = 0, ex = 0;
    if (job->exhaustive) {
        for (int y = job->y0; y < job->y1; y++)
            for (int x = 0; x < px; x++) { ex++; record(c, local, &nlocal, &best, x, y, exact_score(c, x, y)); }
        flush(c, local, nlocal, best, s1, s2, ex);
        return NULL;
    }
    int m = c->stripes * th, nw = c->nwidths;
    // Rows come in one at a time: the window's rows of bound values and of centred stripe box sums are kept in
    // rings of th rows, so nothing the size of the image is allocated.
    uint16_t *vring = malloc(sizeof(uint16_t) * (size_t)iw * th);
    float *bring = malloc(sizeof(float) * (size_t)iw * th * nw);
    float *acc = malloc(sizeof(float) * (size_t)px);
    const float **rows = malloc(sizeof(float *) * (size_t)m);
    // Column sums over the window's rows: v (grey only; in colour it is the sum of the channels), v^2 and, in colour,
    // each channel and the sum of their squares; per
    // stripe width, of the squared box sums (stage 1's Q); per band, of v (stage 2's blocks).
    // (uint32: a template is at most 4096 rows, so even a column of 4096 (R+G+B)^2 fits.)
    uint32_t *col = calloc((size_t)iw * 6, sizeof(uint32_t));
    int64_t *colq = calloc((size_t)iw * 2, sizeof(int64_t));
    int32_t *band = calloc((size_t)iw * BANDS, sizeof(int32_t));
    int64_t *win = malloc(sizeof(int64_t) * (size_t)px * 8), *ewn = win ? win + 6 * px : NULL;
    int64_t *ewvn = win ? win + 7 * px : NULL;
    // Per position of a row: how much the bound's numerator must reach (threshold * norms, less the chroma
    // term), and stage 1's within-block term.
    double *room = malloc(sizeof(double) * (size_t)px), *qsum = malloc(sizeof(double) * (size_t)px);
    float *side = malloc(sizeof(float) * (size_t)px);
    unsigned char *keep = malloc((size_t)px);
    if (!vring || !bring || !acc || !rows || !col || !colq || !band || !win || !room || !qsum || !side || !keep) {
        c->failed = 1;
        free(vring); free(bring); free(acc); free(rows); free(col); free(colq); free(band); free(win); free(room);
        free(qsum); free(side); free(keep);
        return NULL;
    }
    double inv_n = 1.0 / n, inv_axis = 1.0 / c->axis, limit = c->threshold - 1e-9;
    // Colour without the channels: maximised over the window's unknown chroma energy, the bound becomes
    //     score <= sqrt(max(N_luma, 0)^2 / E_luma(window) + E_chroma(template)) / sqrt(E(template)),
    // so a position can be ruled out from the luma sums alone while the template's chroma share is below the
    // threshold squared; only the exact score reads the channels. That costs pruning when the share is large (a
    // strongly coloured icon), so templates with over a quarter of their energy in chroma keep the channel sums.
    double chroma_free = limit * limit * c->et - c->etc;
    int lum = c->gray || (chroma_free > 1e-9 * c->et && c->etc <= 0.25 * c->et);
    double inv_width[STRIPES];
    size_t qoff[STRIPES];
    for (int k = 0; k < c->stripes; k++) {
        inv_width[k] = 1.0 / (c->sx[k + 1] - c->sx[k]);
        qoff[k] = (size_t)c->width_of[k] * iw + c->sx[k];
    }
    void (*dense)(float *, int, int, const float *const *, const float *, int) = dense_generic;
#if defined(__x86_64__)
    if (have_avx2()) dense = dense_avx2;
#endif
    uint16_t *vnew = malloc(sizeof(uint16_t) * (size_t)iw);
    float *bnew = malloc(sizeof(float) * (size_t)iw * nw);
    if (!vnew || !bnew) {
        c->failed = 1;
        free(vnew); free(bnew);
        goto out;
    }
    /// Computes image row yy's bound values and centred stripe box sums into vr and br (nw rows of iw).
    #define LOAD_ROW(yy, vr, br)                                                                              \
        do {                                                                                                  \
            const uint8_t *pr = c->img + (size_t)(yy) * iw * 4;                                               \
            if (c->gray) for (int x = 0; x < iw; x++) (vr)[x] = (uint16_t)grey(pr + x * 4);                   \
            else for (int x = 0; x < iw; x++) (vr)[x] = (uint16_t)(pr[x * 4] + pr[x * 4 + 1] + pr[x * 4 + 2]); \
            for (int k = 0; k < nw; k++) {                                                                    \
                float *o = (br) + (size_t)k * iw;                                                             \
                int wdt = c->widths[k], lim = iw - wdt + 1, shift = c->centre * wdt;                          \
                int32_t s = 0;                                                                                \
                for (int i = 0; i < wdt; i++) s += (vr)[i];                                                   \
                o[0] = (float)(s - shift);                                                                    \
                for (int x = 1; x < lim; x++) { s += (vr)[x + wdt - 1] - (vr)[x - 1]; o[x] = (float)(s - shift); } \
                for (int x = lim; x < iw; x++) o[x] = 0;                                                      \
            }                                                                                                 \
        } while (0)
    /// The ring slot of image row yy: its bound values and its box sums per stripe width.
    #define VSLOT(yy) (vring + (size_t)((yy) % th) * iw)
    #define BSLOT(k, yy) (bring + ((size_t)(k) * th + (size_t)((yy) % th)) * iw)
    // The first window's rows, summed from scratch.
    for (int j = 0; j < th; j++) {
        int yy = job->y0 + j;
        LOAD_ROW(yy, VSLOT(yy), bnew);
        for (int k = 0; k < nw; k++) memcpy(BSLOT(k, yy), bnew + (size_t)k * iw, sizeof(float) * (size_t)iw);
        const uint16_t *vr = VSLOT(yy);
        const uint8_t *pr = c->img + (size_t)yy * iw * 4;
        for (int x = 0; x < iw; x++) {
            uint32_t a = vr[x];
            col[x] += a; col[iw + x] += a * a;
            if (!lum) {
                uint32_t bb = pr[x * 4], g = pr[x * 4 + 1], r = pr[x * 4 + 2];
                col[2 * iw + x] += bb; col[3 * iw + x] += g; col[4 * iw + x] += r;
                col[5 * iw + x] += bb * bb + g * g + r * r;
            }
        }
        for (int k = 0; k < nw; k++) {
            const float *br = BSLOT(k, yy);
            int64_t shift = (int64_t)c->centre * c->widths[k];
            for (int x = 0; x < iw - c->widths[k] + 1; x++) {
                int64_t v = (int32_t)br[x] + shift;
                colq[k * iw + x] += v * v;
            }
        }
    }
    // The band sums are kept only while consecutive rows need them (stage 2 is rare), and rebuilt after a gap.
    int band_row = -1;
    double bt1 = c->wt1_between;
    for (int y = job->y0; y < job->y1; y++) {
        if (y > job->y0) {
            // Row y - 1 leaves the window and row y + th - 1 enters it, into the same ring slot: every sum gets
            // the difference in one pass. Each band boundary row moves from the band below it to the one above.
            int out = y - 1, in = y + th - 1;
            LOAD_ROW(in, vnew, bnew);
            const uint16_t *vo = VSLOT(out);
            // Modulo 2^32: the differences wrap, the sums they leave are in range.
            if (lum) {
                for (int x = 0; x < iw; x++) {
                    uint32_t a = vnew[x], o = vo[x];
                    col[x] += a - o; col[iw + x] += a * a - o * o;
                }
            } else {
                const uint8_t *pn = c->img + (size_t)in * iw * 4, *po = c->img + (size_t)out * iw * 4;
                for (int x = 0; x < iw; x++) {
                    uint32_t a = vnew[x], o = vo[x];
                    col[iw + x] += a * a - o * o;
                    uint32_t nb = pn[x * 4], ng = pn[x * 4 + 1], nr = pn[x * 4 + 2];
                    uint32_t ob = po[x * 4], og = po[x * 4 + 1], or = po[x * 4 + 2];
                    col[2 * iw + x] += nb - ob; col[3 * iw + x] += ng - og; col[4 * iw + x] += nr - or;
                    col[5 * iw + x] += (nb * nb + ng * ng + nr * nr) - (ob * ob + og * og + or * or);
                }
            }
            for (int k = 0; k < nw; k++) {
                const float *bo = BSLOT(k, out), *bn = bnew + (size_t)k * iw;
                int64_t shift = (int64_t)c->centre * c->widths[k];
                int64_t *cq = colq + (size_t)k * iw;
                for (int x = 0; x < iw - c->widths[k] + 1; x++) {
                    int64_t vn = (int32_t)bn[x] + shift, vo2 = (int32_t)bo[x] + shift;
                    cq[x] += vn * vn - vo2 * vo2;
                }
            }
            if (band_row == y - 1) {
                int32_t *restrict first = band, *restrict last = band + (size_t)(c->bands - 1) * iw;
                for (int x = 0; x < iw; x++) { first[x] -= vo[x]; last[x] += vnew[x]; }
                for (int b = 1; b < c->bands; b++) {
                    const uint16_t *restrict vm = VSLOT(out + c->by[b]);
                    int32_t *restrict above = band + (size_t)(b - 1) * iw, *restrict below = band + (size_t)b * iw;
                    for (int x = 0; x < iw; x++) { above[x] += vm[x]; below[x] -= vm[x]; }
                }
                band_row = y;
            }
            memcpy(VSLOT(in), vnew, sizeof(uint16_t) * (size_t)iw);
            for (int k = 0; k < nw; k++) memcpy(BSLOT(k, in), bnew + (size_t)k * iw, sizeof(float) * (size_t)iw);
        }
        // Window sums: sliding horizontal sums of the column sums, the quantities side by side.
        if (lum) {
            const uint32_t *c0 = col, *c1 = col + iw;
            int64_t a = 0, b = 0;
            for (int i = 0; i < tw; i++) { a += c0[i]; b += c1[i]; }
            for (int x = 0;; x++) {
                win[x] = a; win[px + x] = b;
                if (x + 1 == px) break;
                a += (int64_t)c0[x + tw] - c0[x]; b += (int64_t)c1[x + tw] - c1[x];
            }
        } else {
            const uint32_t *c1 = col + iw, *c2 = col + 2 * iw, *c3 = col + 3 * iw, *c4 = col + 4 * iw;
            const uint32_t *c5 = col + 5 * iw;
            int64_t a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0;
            for (int i = 0; i < tw; i++) { a1 += c1[i]; a2 += c2[i]; a3 += c3[i]; a4 += c4[i]; a5 += c5[i]; }
            int64_t *w0 = win, *w1 = win + px, *w2 = win + 2 * px, *w3 = win + 3 * px, *w4 = win + 4 * px;
            int64_t *w5 = win + 5 * px;
            for (int x = 0;; x++) {
                w0[x] = a2 + a3 + a4; w1[x] = a1; w2[x] = a2; w3[x] = a3; w4[x] = a4; w5[x] = a5;
                if (x + 1 == px) break;
                a1 += (int64_t)c1[x + tw] - c1[x]; a2 += (int64_t)c2[x + tw] - c2[x];
                a3 += (int64_t)c3[x + tw] - c3[x]; a4 += (int64_t)c4[x + tw] - c4[x];
                a5 += (int64_t)c5[x + tw] - c5[x];
            }
        }
        // Stage 0, from the window's energies alone: stage 1's bound with its correlation term at its largest
        // (Cauchy-Schwarz on the block means), and the window's within-block energy. Simple passes without
        // branches, so that they vectorise (sqrt too: the shim is built without errno for maths).
        for (int x = 0; x < px; x++) qsum[x] = 0;
        for (int k = 0; k < c->stripes; k++) {
            const int64_t *cq = colq + qoff[k];
            double inv = inv_width[k];
            for (int x = 0; x < px; x++) qsum[x] += (double)cq[x] * inv;
        }
        // The window's energy, n times over (exact integers, so that a flat window is exactly 0): on the bound's
        // axis, and in colour over the three channels; then how much the bound's numerator must reach. Separate
        // loops per mode: a branch inside would vectorise into masked loads.
        if (lum) {
            double k = c->axis * chroma_free;
            for (int x = 0; x < px; x++) {
                int64_t a = win[x];
                ewn[x] = ewvn[x] = (int64_t)n * win[px + x] - a * a;
                room[x] = sqrt(k * (double)ewn[x] * inv_n) * inv_axis;
            }
        } else {
            for (int x = 0; x < px; x++) {
                int64_t a = win[x], sb = win[2 * px + x], sg = win[3 * px + x], sr = win[4 * px + x];
                ewvn[x] = (int64_t)n * win[px + x] - a * a;
                ewn[x] = (int64_t)n * win[5 * px + x] - (sb * sb + sg * sg + sr * sr);
                double ew = (double)ewn[x] * inv_n, ewc = ((double)ewn[x] - (double)ewvn[x] * inv_axis) * inv_n;
                ewc = ewc > 0 ? ewc : 0;
                room[x] = limit * sqrt(c->et * ew) - sqrt(c->etc * ewc);
            }
        }
        int any = 0;
        for (int x0 = 0; x0 < px; x0 += 32) {
          int x1 = x0 + 32 < px ? x0 + 32 : px, flat = 1;
          for (int x = x0; x < x1; x++) flat &= ewn[x] == 0;
          if (flat) {  // flat windows score 0: nothing to bound
              memset(keep + x0, 0, (size_t)(x1 - x0));
              continue;
          }
          for (int x = x0; x < x1; x++) {
            double sv = (double)win[x], sv2 = (double)win[px + x];
            double within = sv2 - qsum[x] + 1e-9 * sv2;
            within = within > 0 ? within : 0;
            double between = qsum[x] - sv * sv * inv_n + 1e-9 * sv2;
            between = between > 0 ? between : 0;
            double w1 = sqrt(c->wt1 * within);
            side[x] = (float)w1;
            unsigned char k =
                (unsigned char)((ewn[x] > 0) & ((sqrt(bt1 * between) + c->err1 + w1) * inv_axis >= room[x]));
            keep[x] = k;
            any |= k;
          }
        }
        s1 += px;
        if (!any) continue;
        // Stage 1 on the 64-position chunks that have a survivor.
        for (int s = 0, k = 0; s < c->stripes; s++)
            for (int r = 0; r < th; r++, k++)
                rows[k] = bring + ((size_t)c->width_of[s] * th + (size_t)((y + r) % th)) * iw + c->sx[s];
        for (int x0 = 0; x0 < px; x0 += 64) {
            int len = px - x0 < 64 ? px - x0 : 64, live = 0;
            for (int i = 0; i < len; i++) live |= keep[x0 + i];
            if (live) dense(acc, x0, len, rows, c->coef1, m);
        }
        for (int x = 0; x < px; x++) {
            if (!keep[x]) continue;
            // side[x] was rounded to float: an ulp of it keeps the bound an upper bound.
            double numv = (double)acc[x] + c->err1 + (double)side[x] * (1 + 1e-6);
            if (numv * inv_axis < room[x]) continue;
            // Stage 2: column blocks of the bands.
            s2++;
            if (band_row != y) {
                memset(band, 0, sizeof(int32_t) * (size_t)iw * c->bands);
                for (int b = 0; b < c->bands; b++) {
                    int32_t *restrict bs = band + (size_t)b * iw;
                    for (int r = c->by[b]; r < c->by[b + 1]; r++) {
                        const uint16_t *restrict vr = VSLOT(y + r);
                        for (int i = 0; i < iw; i++) bs[i] += vr[i];
                    }
                }
                band_row = y;
            }
            double a2 = 0, q2 = 0;
            for (int b = 0; b < c->bands; b++) {
                double qa = 0;
                a2 += band_dot(c->coef2 + (size_t)b * tw, band + (size_t)b * iw + x, tw, &qa);
                q2 += qa / (c->by[b + 1] - c->by[b]);
            }
            double sv2 = (double)win[px + x];
            double within = sv2 - q2 + 1e-9 * sv2;
            within = within > 0 ? within : 0;
            numv = a2 + 1e-9 * fabs(a2) + sqrt(c->wt2 * within);
            if (numv * inv_axis < room[x]) continue;
            ex++;
            record(c, local, &nlocal, &best, x, y, exact_score(c, x, y));
        }
    }
    #undef LOAD_ROW
    #undef VSLOT
    #undef BSLOT
    free(vnew); free(bnew);
out:
    flush(c, local, nlocal, best, s1, s2, ex);
    free(vring); free(bring); free(acc); free(rows); free(col); free(colq); free(band); free(win); free(room);
    free(qsum); free(side); free(keep);
    return NULL;
}

int xclaw_match_template(const uint8_t *image, int iw, int ih, const uint8_t *templ, int tw, int th, int gray,
                         double threshold, int exhaustive, xclaw_match_hit *hits, int max_hits,
                         xclaw_match_hit *best, xclaw_match_stats *stats) {
    if (iw <= 0 || ih <= 0 || tw <= 0 || th <= 0) return XCLAW_MATCH_BAD_SIZE;
    if (tw > iw || th > ih) return XCLAW_MATCH_TOO_LARGE;
    // At most 1 Mpx keeps n * sums in int64; at most 4096 rows keeps column sums in uint32.
    if ((int64_t)tw * th > 1024 * 1024 || tw > 4096 || th > 4096) return XCLAW_MATCH_BAD_SIZE;
    match_ctx c;
    memset(&c, 0, sizeof c);
    c.img = image; c.iw = iw; c.ih = ih; c.tpl = templ; c.tw = tw; c.th = th; c.n = tw * th;
    c.gray = gray != 0; c.threshold = threshold; c.hits = hits; c.max_hits = max_hits;
    c.channels = c.gray ? 1 : 3; c.axis = c.gray ? 1 : 3; c.centre = c.gray ? 127 : 382;
    c.best = (xclaw_match_hit){ -1, -1, -2 };
    pthread_mutex_init(&c.lock, NULL);
    int rc = XCLAW_MATCH_NO_MEMORY;
    uint8_t *gray_tpl = NULL;
    double *tv = malloc(sizeof(double) * (size_t)c.n);
    if (!tv) goto done;
    // The template: exact sums per channel, its values on the bound's axis, zero-mean.
    if (c.gray) {
        gray_tpl = malloc((size_t)c.n);
        if (!gray_tpl) goto done;
        xclaw_bgrx_to_gray(templ, tw, 0, 0, tw, th, gray_tpl);
        c.gray_tpl = gray_tpl;
        for (int i = 0; i < c.n; i++) { c.st[0] += gray_tpl[i]; c.st2[0] += gray_tpl[i] * gray_tpl[i]; tv[i] = gray_tpl[i]; }
    } else {
        for (int i = 0; i < c.n; i++) {
            int sum = 0;
            for (int ch = 0; ch < 3; ch++) {
                int p = templ[i * 4 + ch];
                c.st[ch] += p; c.st2[ch] += p * p; sum += p;
            }
            tv[i] = sum;
        }
    }
    for (int ch = 0; ch < c.channels; ch++) c.et_n += (int64_t)c.n * c.st2[ch] - c.st[ch] * c.st[ch];
    if (c.et_n <= 0) { rc = XCLAW_MATCH_FLAT; goto done; }
    c.et = (double)c.et_n / c.n;
    double mean = 0;
    for (int i = 0; i < c.n; i++) mean += tv[i];
    mean /= c.n;
    c.etv = 0;
    for (int i = 0; i < c.n; i++) { tv[i] -= mean; c.etv += tv[i] * tv[i]; }
    c.etc = c.gray ? 0 : c.et - c.etv / c.axis;
    if (c.etc < 0) c.etc = 0;
    if (!exhaustive) {
        // Stage 1 blocks: a row of a stripe. Stage 2: a column of a band.
        c.stripes = tw < STRIPES ? tw : STRIPES;
        c.bands = th < BANDS ? th : BANDS;
        for (int s = 0; s <= c.stripes; s++) c.sx[s] = s * tw / c.stripes;
        for (int b = 0; b <= c.bands; b++) c.by[b] = b * th / c.bands;
        c.coef1 = calloc((size_t)STRIPES * th, sizeof(float));
        c.coef2 = calloc((size_t)BANDS * tw, sizeof(double));
        if (!c.coef1 || !c.coef2) goto done;
        double between = 0, abs_sum = 0;
        for (int s = 0; s < c.stripes; s++) {
            int wdt = c.sx[s + 1] - c.sx[s];
            int k = 0;
            while (k < c.nwidths && c.widths[k] != wdt) k++;
            if (k == c.nwidths) c.widths[c.nwidths++] = wdt;
            c.width_of[s] = k;
            for (int r = 0; r < th; r++) {
                double t = 0;
                for (int i = c.sx[s]; i < c.sx[s + 1]; i++) t += tv[r * tw + i];
                c.coef1[s * th + r] = (float)(t / wdt);
                between += t * t / wdt;
                abs_sum += fabs(t);
            }
        }
        c.wt1_between = between;
        c.wt1 = c.etv - between;
        if (c.wt1 < 0) c.wt1 = 0;
        // Float rounding of stage 1: m sequential multiply-adds of |block mean| * |centred block sum|, where a
        // centred block sum is at most (max - centre) * width: gamma_m * sum |T_j| * (max - centre), doubled.
        int vmax = c.gray ? 255 : 765;
        double gamma = (2.0 * c.stripes * th + 4) * ldexp(1.0, -24);
        c.err1 = 2 * gamma * abs_sum * (vmax - c.centre) + 1e-6;
        between = 0;
        for (int b = 0; b < c.bands; b++) {
            int h = c.by[b + 1] - c.by[b];
            for (int i = 0; i < tw; i++) {
                double t = 0;
                for (int r = c.by[b]; r < c.by[b + 1]; r++) t += tv[r * tw + i];
                c.coef2[(size_t)b * tw + i] = t / h;
                between += t * t / h;
            }
        }
        c.wt2 = c.etv - between;
        if (c.wt2 < 0) c.wt2 = 0;
    }
    {
        // Rows of positions in two halves on two threads when there is enough work to repay a thread start.
        int py = ih - th + 1;
        int parts = (long)py * (iw - tw + 1) >= 65536 && py >= 2 ? 2 : 1;
        match_job jobs[2];
        for (int p = 0; p < parts; p++) jobs[p] = (match_job){ &c, py * p / parts, py * (p + 1) / parts, exhaustive };
        pthread_t thread;
        int threaded = parts == 2 && pthread_create(&thread, NULL, search_rows, &jobs[1]) == 0;
        search_rows(&jobs[0]);
        if (parts == 2) { if (threaded) pthread_join(thread, NULL); else search_rows(&jobs[1]); }
    }
    if (c.failed) goto done;
    rc = c.count;
    if (best) *best = c.best;
    if (stats) { stats->positions = c.stage1 > 0 ? c.stage1 : c.exact; stats->stage2 = c.stage2; stats->exact = c.exact; }
done:
    pthread_mutex_destroy(&c.lock);
    free(tv); free(gray_tpl); free(c.coef1); free(c.coef2);
    return rc;
}

int xclaw_find_color(const uint8_t *bgrx, int width, int height, int r, int g, int b, int tolerance, int *x, int *y) {
    for (int j = 0; j < height; j++) {
        const uint8_t *p = bgrx + (size_t)j * width * 4;
        for (int i = 0; i < width; i++, p += 4) {
            if (abs(p[2] - r) <= tolerance && abs(p[1] - g) <= tolerance && abs(p[0] - b) <= tolerance) {
                *x = i; *y = j;
                return 1;
            }
        }
    }
    return 0;
}

/// Where destination index i of dn samples a source axis of sn: the two neighbours and the second one's weight, with
/// pixel centres aligned (destination centre i + 0.5 maps to source (i + 0.5) * sn / dn - 0.5).
static void bilinear_axis(int i, int sn, int dn, int *i0, int *i1, double *weight) {
    double f = (i + 0.5) * sn / dn - 0.5;
    *i0 = f < 0 ? 0 : (int)f;
    *i1 = *i0 + 1 < sn ? *i0 + 1 : sn - 1;
    *weight = f - *i0 > 0 ? f - *i0 : 0;
}

int xclaw_upscale_bgrx(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh) {
    if (sw <= 0 || sh <= 0 || dw < sw || dh < sh) return -1;
    for (int y = 0; y < dh; y++) {
        int y0, y1;
        double wy;
        bilinear_axis(y, sh, dh, &y0, &y1, &wy);
        for (int x = 0; x < dw; x++) {
            int x0, x1;
            double wx;
            bilinear_axis(x, sw, dw, &x0, &x1, &wx);
            const uint8_t *a = src + ((size_t)y0 * sw + x0) * 4, *b = src + ((size_t)y0 * sw + x1) * 4;
            const uint8_t *c = src + ((size_t)y1 * sw + x0) * 4, *d = src + ((size_t)y1 * sw + x1) * 4;
            uint8_t *o = dst + ((size_t)y * dw + x) * 4;
            for (int ch = 0; ch < 3; ch++) {
                double top = a[ch] + (b[ch] - a[ch]) * wx, bottom = c[ch] + (d[ch] - c[ch]) * wx;
                o[ch] = (uint8_t)(top + (bottom - top) * wy + 0.5);
            }
            o[3] = 0;
        }
    }
    return 0;
}
