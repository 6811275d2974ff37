#ifndef XCLAW_GLYPHS_H
#define XCLAW_GLYPHS_H
#include <stdint.h>

// Glyph rendering with FreeType, for reading single-glyph labels by comparing them with the fonts toolkits draw them
// in (DejaVu for Tk and GTK, X's misc-fixed and Symbol fonts for Xt apps).

/// Opens a font file (TrueType, Type 1, PCF, also gzip-compressed); NULL when FreeType cannot read it.
void *xclaw_font_open(const char *path);

/// Closes a font opened by xclaw_font_open.
void xclaw_font_close(void *font);

/// Whether the font is a bitmap font with fixed sizes (then pixel_size is ignored: it renders at its own size).
int xclaw_font_is_bitmap(void *font);

/// Renders `codepoint` at `pixel_size` (ppem), shifted right by `phase % 64` and down by `phase / 64` 64ths of a
/// pixel (in one bit when `mono`,
/// as X rasterises its core fonts, else anti-aliased as Xft does), cropped tight to its ink, as coverage 0..255 into dst (max_w x max_h
/// bytes, row stride *w). Returns 1 and sets *w, *h; 0 when the font lacks the glyph, it has no ink, or it is larger
/// than max_w x max_h.
int xclaw_font_render(void *font, int pixel_size, int phase, int mono, uint32_t codepoint, uint8_t *dst, int max_w,
                      int max_h, int *w, int *h);

/// How alike two ink maps are (coverage 0..255): `b` (bw x bh) is resampled onto `a`'s grid (aw x ah) and the two are
/// compared by normalised cross-correlation; -1..1, and -1 when either is blank.
double xclaw_glyph_similarity(const uint8_t *a, int aw, int ah, const uint8_t *b, int bw, int bh);

#endif
