// FreeType rendering of single glyphs and their comparison with ink seen on screen. All FreeType state stays in this
// file; a font handle is used by one thread at a time (the Swift side locks it).
#include "xclaw_glyphs.h"
#include <ft2build.h>
#include FT_FREETYPE_H
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    FT_Library library;
    FT_Face face;
} Font;

void *xclaw_font_open(const char *path) {
    Font *font = calloc(1, sizeof(Font));
    if (!font) return NULL;
    if (FT_Init_FreeType(&font->library)) { free(font); return NULL; }
    if (FT_New_Face(font->library, path, 0, &font->face)) {
        FT_Done_FreeType(font->library);
        free(font);
        return NULL;
    }
    // Prefer a Unicode map (Type 1 symbol fonts get one synthesised from glyph names: "pi" is U+03C0).
    FT_Select_Charmap(font->face, FT_ENCODING_UNICODE);
    return font;
}

void xclaw_font_close(void *handle) {
    Font *font = handle;
    if (!font) return;
    FT_Done_Face(font->face);
    FT_Done_FreeType(font->library);
    free(font);
}

int xclaw_font_is_bitmap(void *handle) {
    Font *font = handle;
    return font && !FT_IS_SCALABLE(font->face) && font->face->num_fixed_sizes > 0;
}

int xclaw_font_render(void *handle, int pixel_size, int phase, int mono, uint32_t codepoint, uint8_t *dst, int max_w,
                      int max_h, int *w, int *h) {
    Font *font = handle;
    if (!font || !dst || !w || !h) return 0;
    FT_Face face = font->face;
    if (FT_IS_SCALABLE(face)) {
        if (FT_Set_Pixel_Sizes(face, 0, (FT_UInt)pixel_size)) return 0;
    } else if (face->num_fixed_sizes > 0) {
        if (FT_Select_Size(face, 0)) return 0;
    } else {
        return 0;
    }
    FT_UInt index = FT_Get_Char_Index(face, codepoint);
    if (!index) return 0;
    // Where the glyph starts within its first pixel changes its anti-aliasing; a label may sit at any phase, across
    // (most labels) or, drawn at a fractional height, also down.
    FT_Vector delta = { phase % 64, -(phase / 64) };
    FT_Set_Transform(face, NULL, &delta);
    // Hinted and anti-aliased, as Xft draws for Tk and GTK; bitmap fonts come out as their mono strikes.
    // X's core fonts are rasterised in one bit: `mono` renders so too.
    if (FT_Load_Glyph(face, index, FT_LOAD_RENDER | (mono ? FT_LOAD_TARGET_MONO : FT_LOAD_TARGET_LIGHT))) return 0;
    FT_Bitmap *bm = &face->glyph->bitmap;
    int bw = (int)bm->width, bh = (int)bm->rows;
    if (bw <= 0 || bh <= 0) return 0;
    // Coverage of each pixel, then the tight box around the ink.
    int x0 = bw, y0 = bh, x1 = -1, y1 = -1;
    for (int y = 0; y < bh; y++)
        for (int x = 0; x < bw; x++) {
            const uint8_t *row = bm->buffer + (long)y * bm->pitch;
            int v = bm->pixel_mode == FT_PIXEL_MODE_MONO ? ((row[x >> 3] >> (7 - (x & 7))) & 1) * 255 : row[x];
            if (v > 40) {
                if (x < x0) x0 = x;
                if (x > x1) x1 = x;
                if (y < y0) y0 = y;
                if (y > y1) y1 = y;
            }
        }
    if (x1 < 0) return 0;
    int cw = x1 - x0 + 1, ch = y1 - y0 + 1;
    if (cw > max_w || ch > max_h) return 0;
    for (int y = 0; y < ch; y++)
        for (int x = 0; x < cw; x++) {
            const uint8_t *row = bm->buffer + (long)(y + y0) * bm->pitch;
            int sx = x + x0;
            dst[y * cw + x] = (uint8_t)(bm->pixel_mode == FT_PIXEL_MODE_MONO
                                            ? ((row[sx >> 3] >> (7 - (sx & 7))) & 1) * 255
                                            : row[sx]);
        }
    *w = cw;
    *h = ch;
    return 1;
}

double xclaw_glyph_similarity(const uint8_t *a, int aw, int ah, const uint8_t *b, int bw, int bh) {
    if (!a || !b || aw <= 0 || ah <= 0 || bw <= 0 || bh <= 0) return -1;
    double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
    int n = aw * ah;
    for (int y = 0; y < ah; y++) {
        // Sample b at the centre of a's pixel (bilinear).
        double fy = ((y + 0.5) * bh / ah) - 0.5;
        if (fy < 0) fy = 0;
        int y0 = (int)fy, y1 = y0 + 1 < bh ? y0 + 1 : bh - 1;
        double wy = fy - y0;
        for (int x = 0; x < aw; x++) {
            double fx = ((x + 0.5) * bw / aw) - 0.5;
            if (fx < 0) fx = 0;
            int x0 = (int)fx, x1 = x0 + 1 < bw ? x0 + 1 : bw - 1;
            double wx = fx - x0;
            double top = b[y0 * bw + x0] * (1 - wx) + b[y0 * bw + x1] * wx;
            double bottom = b[y1 * bw + x0] * (1 - wx) + b[y1 * bw + x1] * wx;
            double vb = top * (1 - wy) + bottom * wy, va = a[y * aw + x];
            sa += va; sb += vb; saa += va * va; sbb += vb * vb; sab += va * vb;
        }
    }
    double da = saa - sa * sa / n, db = sbb - sb * sb / n;
    if (da <= 1e-9 || db <= 1e-9) return -1;
    return (sab - sa * sb / n) / sqrt(da * db);
}
