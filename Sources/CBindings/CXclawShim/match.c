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
//   Stage 1, at every position: blocks are one template row of one of 4 vertical stripes, so the block sums are
//   horizontal box sums of the image, and the bound is a dense sum the CPU does 8 (AVX2) positions at a time.
//   Stage 2, where stage 1 could not prune: blocks are one column of one of 4 horizontal bands.
//   Stage 3: the exact score, in exact integer sums.
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
    // The image, BGRX, and its plane of bound values (luma R+G+B, or the grey level in grey mode).
    const uint8_t *img; int iw, ih;
    const uint8_t *gray_img;  // grey mode: the image's grey levels
    const uint16_t *v;        // the bound's values, iw * ih
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
    float *box[2];        // centred horizontal box sums per distinct stripe width: iw * ih floats (unused tail)
    int centre;           // value subtracted per pixel before the float sums
    int by[BANDS + 1];    // band edges
    double *coef2;        // BANDS * tw block means
    double wt2;
    int32_t *colprefix;   // (ih + 1) * iw column prefix sums of v
    // Output.
    xclaw_match_hit *hits; int max_hits;
    pthread_mutex_t lock;
    int count;
    xclaw_match_hit best;
    long stage1, stage2, exact;
    int failed;
} match_ctx;

/// The exact score at (x, y), from exact integer sums: the same expression in the fast and the exhaustive search.
CLONES static double exact_score(const match_ctx *c, int x, int y) {
    int64_t si[3] = { 0, 0, 0 }, si2[3] = { 0, 0, 0 }, sti[3] = { 0, 0, 0 };
    int n = c->n;
    if (c->gray) {
        for (int j = 0; j < c->th; j++) {
            const uint8_t *r = c->gray_img + (size_t)(y + j) * c->iw + x, *t = c->gray_tpl + (size_t)j * c->tw;
            int32_t a = 0, b = 0, d = 0;  // a row: 255 * 255 * tw fits for tw < 33000
            for (int i = 0; i < c->tw; i++) { int p = r[i]; a += p; b += p * p; d += p * t[i]; }
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

/// Stage 1's dense sums for one row of positions: acc[x] = sum_k coef[k] * rows[k][x].
static void dense_generic(float *acc, int px, const float *const *rows, const float *coef, int m) {
    for (int x = 0; x < px; x++) acc[x] = 0;
    for (int k = 0; k < m; k++) {
        const float *p = rows[k]; float t = coef[k];
        for (int x = 0; x < px; x++) acc[x] += t * p[x];
    }
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma")))
static void dense_avx2(float *acc, int px, const float *const *rows, const float *coef, int m) {
    int x = 0;
    for (; x + 32 <= px; x += 32) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int k = 0; k < m; k++) {
            const float *p = rows[k] + x;
            __m256 t = _mm256_set1_ps(coef[k]);
            a0 = _mm256_fmadd_ps(t, _mm256_loadu_ps(p), a0);
            a1 = _mm256_fmadd_ps(t, _mm256_loadu_ps(p + 8), a1);
            a2 = _mm256_fmadd_ps(t, _mm256_loadu_ps(p + 16), a2);
            a3 = _mm256_fmadd_ps(t, _mm256_loadu_ps(p + 24), a3);
        }
        _mm256_storeu_ps(acc + x, a0); _mm256_storeu_ps(acc + x + 8, a1);
        _mm256_storeu_ps(acc + x + 16, a2); _mm256_storeu_ps(acc + x + 24, a3);
    }
    for (; x < px; x++) {
        float a = 0;
        for (int k = 0; k < m; k++) a = fmaf(coef[k], rows[k][x], a);
        acc[x] = a;
    }
}
static int have_avx2(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
#endif

/// Stage 2's sums over one band: sum coef[i] * W_i and (into *squares) sum W_i^2, W_i = bottom[i] - top[i].
CLONES static double band_dot(const double *coef, const int32_t *top, const int32_t *bottom, int n, double *squares) {
    double a0 = 0, a1 = 0, a2 = 0, a3 = 0, q0 = 0, q1 = 0, q2 = 0, q3 = 0;
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        double w0 = bottom[i] - top[i], w1 = bottom[i + 1] - top[i + 1];
        double w2 = bottom[i + 2] - top[i + 2], w3 = bottom[i + 3] - top[i + 3];
        a0 += coef[i] * w0; a1 += coef[i + 1] * w1; a2 += coef[i + 2] * w2; a3 += coef[i + 3] * w3;
        q0 += w0 * w0; q1 += w1 * w1; q2 += w2 * w2; q3 += w3 * w3;
    }
    for (; i < n; i++) { double w = bottom[i] - top[i]; a0 += coef[i] * w; q0 += w * w; }
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
    int m = c->stripes * th;
    float *acc = malloc(sizeof(float) * (size_t)px);
    const float **rows = malloc(sizeof(float *) * (size_t)m);
    // Column sums over the window's rows, for the window's energy: v, v^2 and, in colour, each channel and the
    // sum of their squares. Then per distinct stripe width: the column sums of squared box sums (stage 1's Q).
    int64_t *col = calloc((size_t)iw * 6, sizeof(int64_t));
    int64_t *colq = calloc((size_t)iw * 2, sizeof(int64_t));
    int64_t *win = malloc(sizeof(int64_t) * (size_t)px * 6);
    double *energy = malloc(sizeof(double) * (size_t)px * 2), *chroma = energy ? energy + px : NULL;
    unsigned char *keep = malloc((size_t)px);
    if (!acc || !rows || !col || !colq || !win || !energy || !keep) {
        c->failed = 1;
        free(acc); free(rows); free(col); free(colq); free(win); free(energy); free(keep);
        return NULL;
    }
    double inv_n = 1.0 / n, inv_axis = 1.0 / c->axis, limit = c->threshold - 1e-9;
    double inv_width[STRIPES];
    size_t qoff[STRIPES];
    for (int k = 0; k < c->stripes; k++) {
        inv_width[k] = 1.0 / (c->sx[k + 1] - c->sx[k]);
        qoff[k] = (size_t)c->width_of[k] * iw + c->sx[k];
    }
    int q = c->gray ? 2 : 6;  // quantities: v, v2 [, b, g, r, b2+g2+r2]
    void (*dense)(float *, int, const float *const *, const float *, int) = dense_generic;
#if defined(__x86_64__)
    if (have_avx2()) dense = dense_avx2;
#endif
    /// Adds (sign 1) or removes (-1) image row yy from the column sums.
    #define COLUMN_ROW(yy, sign)                                                                         \
        do {                                                                                             \
            const uint16_t *vr = c->v + (size_t)(yy) * iw;                                               \
            for (int x = 0; x < iw; x++) { int64_t a = vr[x]; col[x] += (sign) * a; col[iw + x] += (sign) * a * a; } \
            if (!c->gray) {                                                                              \
                const uint8_t *pr = c->img + (size_t)(yy) * iw * 4;                                      \
                for (int x = 0; x < iw; x++) {                                                           \
                    int b = pr[x * 4], g = pr[x * 4 + 1], r = pr[x * 4 + 2];                             \
                    col[2 * iw + x] += (sign) * b; col[3 * iw + x] += (sign) * g;                         \
                    col[4 * iw + x] += (sign) * r; col[5 * iw + x] += (sign) * (b * b + g * g + r * r);   \
                }                                                                                        \
            }                                                                                            \
            for (int k = 0; k < c->nwidths; k++) {                                                       \
                const float *br = c->box[k] + (size_t)(yy) * iw;                                         \
                int64_t shift = (int64_t)c->centre * c->widths[k];                                      \
                int lim = iw - c->widths[k] + 1;                                                         \
                for (int x = 0; x < lim; x++) { int64_t b = (int32_t)br[x] + shift; colq[k * iw + x] += (sign) * b * b; } \
            }                                                                                            \
        } while (0)
    for (int j = 0; j < th; j++) COLUMN_ROW(job->y0 + j, 1);
    for (int y = job->y0; y < job->y1; y++) {
        if (y > job->y0) { COLUMN_ROW(y - 1, -1); COLUMN_ROW(y + th - 1, 1); }
        // Window sums: sliding horizontal sums of the column sums.
        for (int k = 0; k < q; k++) {
            const int64_t *cr = col + (size_t)k * iw;
            int64_t s = 0;
            for (int i = 0; i < tw; i++) s += cr[i];
            int64_t *wr = win + (size_t)k * px;
            wr[0] = s;
            for (int x = 1; x < px; x++) { s += cr[x + tw - 1] - cr[x - 1]; wr[x] = s; }
        }
        for (int s = 0, k = 0; s < c->stripes; s++)
            for (int r = 0; r < th; r++, k++)
                rows[k] = c->box[c->width_of[s]] + (size_t)(y + r) * iw + c->sx[s];
        dense(acc, px, rows, c->coef1, m);
        // Stage 1's bound at every position of the row, branch-free so that it vectorises; survivors are marked.
        for (int x = 0; x < px; x++) {
            // Energies from exact integer sums (n * energy), so that a flat window is exactly 0.
            int64_t isv = win[x], ewv_n = (int64_t)n * win[px + x] - isv * isv, ew_n = ewv_n;
            if (!c->gray) {
                int64_t sb = win[2 * px + x], sg = win[3 * px + x], sr = win[4 * px + x];
                ew_n = (int64_t)n * win[5 * px + x] - (sb * sb + sg * sg + sr * sr);
            }
            double sv2 = (double)win[px + x], ew = (double)ew_n * inv_n;
            double ewc = c->gray ? 0 : ((double)ew_n - (double)ewv_n * inv_axis) * inv_n;
            ewc = ewc > 0 ? ewc : 0;
            double qsum = 0;
            for (int k = 0; k < c->stripes; k++) qsum += (double)colq[qoff[k] + x] * inv_width[k];
            double within = sv2 - qsum + 1e-9 * sv2;
            within = within > 0 ? within : 0;
            double numv = (double)acc[x] + c->err1 + sqrt(c->wt1 * within);
            // A flat window scores 0, below every threshold.
            keep[x] = ew_n > 0 && numv * inv_axis + sqrt(c->etc * ewc) >= limit * sqrt(c->et * ew);
            energy[x] = ew;
            chroma[x] = ewc;
        }
        s1 += px;
        for (int x = 0; x < px; x++) {
            if (!keep[x]) continue;
            // Stage 2: column blocks of the bands.
            s2++;
            double a2 = 0, q2 = 0;
            for (int b = 0; b < c->bands; b++) {
                const int32_t *top = c->colprefix + (size_t)(y + c->by[b]) * iw + x;
                const int32_t *bottom = c->colprefix + (size_t)(y + c->by[b + 1]) * iw + x;
                double qa = 0;
                a2 += band_dot(c->coef2 + (size_t)b * tw, top, bottom, tw, &qa);
                q2 += qa / (c->by[b + 1] - c->by[b]);
            }
            double sv2 = (double)win[px + x];
            double within = sv2 - q2 + 1e-9 * sv2;
            within = within > 0 ? within : 0;
            double numv = a2 + 1e-9 * fabs(a2) + sqrt(c->wt2 * within);
            if (numv * inv_axis + sqrt(c->etc * chroma[x]) < limit * sqrt(c->et * energy[x])) continue;
            ex++;
            record(c, local, &nlocal, &best, x, y, exact_score(c, x, y));
        }
    }
    #undef COLUMN_ROW
    flush(c, local, nlocal, best, s1, s2, ex);
    free(acc); free(rows); free(col); free(colq); free(win); free(energy); free(keep);
    return NULL;
}

/// Builds the bound's value plane, the float box planes and the column prefix sums.
CLONES static int prepare_planes(match_ctx *c, uint8_t **gray_img, uint16_t **v) {
    size_t pixels = (size_t)c->iw * c->ih;
    *v = malloc(sizeof(uint16_t) * pixels);
    if (!*v) return -1;
    if (c->gray) {
        *gray_img = malloc(pixels);
        if (!*gray_img) return -1;
        xclaw_bgrx_to_gray(c->img, c->iw, 0, 0, c->iw, c->ih, *gray_img);
        for (size_t i = 0; i < pixels; i++) (*v)[i] = (*gray_img)[i];
    } else {
        for (size_t i = 0; i < pixels; i++)
            (*v)[i] = (uint16_t)(c->img[i * 4] + c->img[i * 4 + 1] + c->img[i * 4 + 2]);
    }
    for (int k = 0; k < c->nwidths; k++) {
        c->box[k] = malloc(sizeof(float) * pixels);
        if (!c->box[k]) return -1;
        int wdt = c->widths[k], lim = c->iw - wdt + 1, shift = c->centre * wdt;
        for (int y = 0; y < c->ih; y++) {
            const uint16_t *r = *v + (size_t)y * c->iw;
            float *o = c->box[k] + (size_t)y * c->iw;
            int32_t s = 0;
            for (int i = 0; i < wdt; i++) s += r[i];
            o[0] = (float)(s - shift);
            for (int x = 1; x < lim; x++) { s += r[x + wdt - 1] - r[x - 1]; o[x] = (float)(s - shift); }
            for (int x = lim; x < c->iw; x++) o[x] = 0;
        }
    }
    c->colprefix = malloc(sizeof(int32_t) * (size_t)c->iw * (c->ih + 1));
    if (!c->colprefix) return -1;
    memset(c->colprefix, 0, sizeof(int32_t) * (size_t)c->iw);
    for (int y = 0; y < c->ih; y++) {
        const uint16_t *r = *v + (size_t)y * c->iw;
        const int32_t *above = c->colprefix + (size_t)y * c->iw;
        int32_t *o = c->colprefix + (size_t)(y + 1) * c->iw;
        for (int x = 0; x < c->iw; x++) o[x] = above[x] + r[x];
    }
    return 0;
}

int xclaw_match_template(const uint8_t *image, int iw, int ih, const uint8_t *templ, int tw, int th, int gray,
                         double threshold, int exhaustive, xclaw_match_hit *hits, int max_hits,
                         xclaw_match_hit *best, xclaw_match_stats *stats) {
    if (iw <= 0 || ih <= 0 || tw <= 0 || th <= 0) return XCLAW_MATCH_BAD_SIZE;
    if (tw > iw || th > ih) return XCLAW_MATCH_TOO_LARGE;
    if ((int64_t)tw * th > 1024 * 1024 || tw >= 33000) return XCLAW_MATCH_BAD_SIZE;  // keeps n * sums in int64
    match_ctx c;
    memset(&c, 0, sizeof c);
    c.img = image; c.iw = iw; c.ih = ih; c.tpl = templ; c.tw = tw; c.th = th; c.n = tw * th;
    c.gray = gray != 0; c.threshold = threshold; c.hits = hits; c.max_hits = max_hits;
    c.channels = c.gray ? 1 : 3; c.axis = c.gray ? 1 : 3; c.centre = c.gray ? 127 : 382;
    c.best = (xclaw_match_hit){ -1, -1, -2 };
    pthread_mutex_init(&c.lock, NULL);
    int rc = XCLAW_MATCH_NO_MEMORY;
    uint8_t *gray_img = NULL, *gray_tpl = NULL;
    uint16_t *v = NULL;
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
        if (prepare_planes(&c, &gray_img, &v) != 0) goto done;
        c.gray_img = gray_img; c.v = v;
    } else if (c.gray) {
        gray_img = malloc((size_t)iw * ih);
        if (!gray_img) goto done;
        xclaw_bgrx_to_gray(image, iw, 0, 0, iw, ih, gray_img);
        c.gray_img = gray_img;
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
    free(tv); free(gray_img); free(gray_tpl); free(v); free(c.coef1); free(c.coef2); free(c.colprefix);
    for (int k = 0; k < 2; k++) free(c.box[k]);
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

int xclaw_upscale_bgrx(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh) {
    if (sw <= 0 || sh <= 0 || dw < sw || dh < sh) return -1;
    for (int y = 0; y < dh; y++) {
        // Centres aligned: destination pixel centre y + 0.5 maps to source (y + 0.5) * sh / dh - 0.5.
        double fy = (y + 0.5) * sh / dh - 0.5;
        int y0 = fy < 0 ? 0 : (int)fy;
        int y1 = y0 + 1 < sh ? y0 + 1 : sh - 1;
        double wy = fy - y0;
        if (wy < 0) wy = 0;
        for (int x = 0; x < dw; x++) {
            double fx = (x + 0.5) * sw / dw - 0.5;
            int x0 = fx < 0 ? 0 : (int)fx;
            int x1 = x0 + 1 < sw ? x0 + 1 : sw - 1;
            double wx = fx - x0;
            if (wx < 0) wx = 0;
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
