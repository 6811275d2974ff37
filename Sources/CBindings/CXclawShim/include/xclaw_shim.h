// C kernels for xclaw's screen layer. Compiled with -O2 even in debug builds: pixel loops in debug Swift are
// 10x slower than in C (x11-ocr-notes.md). Every function is pure over caller-owned buffers; no state.
#ifndef XCLAW_SHIM_H
#define XCLAW_SHIM_H
#include <stddef.h>
#include <stdint.h>
#include <X11/Xlib.h>

/// Copies an XImage's pixels into tightly packed BGRX (4 bytes a pixel; the X byte is padding, never read). Handles 32 bpp BGRX directly and
/// any TrueColor layout (16/24/32 bpp, either byte order) through its channel masks. Returns 0, or -1 if unsupported.
int xclaw_ximage_to_bgrx(const uint8_t *src, int width, int height, int bytes_per_line, int bits_per_pixel,
                         int msb_first, unsigned long red_mask, unsigned long green_mask, unsigned long blue_mask,
                         uint8_t *dst);

/// Packs BGRX into RGB (3 bytes a pixel).
void xclaw_bgrx_to_rgb(const uint8_t *src, size_t pixels, uint8_t *dst);

/// Expands BGRX into RGBA with alpha 255 (the X byte is 0 and must never become alpha).
void xclaw_bgrx_to_rgba(const uint8_t *src, size_t pixels, uint8_t *dst);

/// Area-averaging downscale of BGRX (every source pixel contributes by the area it covers; 8.8 fixed-point weights,
/// within one level of the exact mean at ratios up to 4:1, three at 100:1). Uses two threads for large images.
/// dst_w <= src_w and dst_h <= src_h. Returns 0, or -1 on bad sizes or allocation failure.
int xclaw_downscale_bgrx(const uint8_t *src, int src_w, int src_h, uint8_t *dst, int dst_w, int dst_h);

/// Encodes BGRX as an 8-bit RGB PNG with libpng's classic API (setjmp-based, hence in C).
/// level: zlib 0-9; strategy: zlib Z_* strategy; filters: PNG_FILTER_* mask. On success returns 0 and
/// *out/*out_len hold a malloc'd buffer the caller frees with xclaw_free; on failure returns -1 and err holds why.
int xclaw_png_encode_bgrx(const uint8_t *bgrx, int width, int height, int level, int strategy, int filters,
                          uint8_t **out, size_t *out_len, char *err, size_t err_len);

/// Encodes BGRX as an 8-bit RGB PNG with filter "none", deflating row stripes on `threads` threads (zlib directly,
/// pigz-style joining). Same contract as xclaw_png_encode_bgrx.
int xclaw_png_encode_bgrx_fast(const uint8_t *bgrx, int width, int height, int level, int strategy, int threads,
                               uint8_t **out, size_t *out_len, char *err, size_t err_len);

/// Encodes BGRX as a baseline JPEG at `quality` (1-100) with libjpeg(-turbo), setjmp-based hence in C. Same contract
/// as xclaw_png_encode_bgrx: *out is malloc'd (free it with xclaw_free).
int xclaw_jpeg_encode_bgrx(const uint8_t *bgrx, int width, int height, int quality, uint8_t **out, size_t *out_len,
                           char *err, size_t err_len);

/// free() for buffers the shim allocated.
void xclaw_free(void *p);

/// For an IO-error exit handler that returns: gives back the user lock `_XIOError` took and takes back the display
/// mutex it released, so the Xlib call that met the loss unwinds with both as it expects (see xlock.c).
void xclaw_display_io_error_returning(Display *dpy);

/// Closes the socket and XCB state of a connection whose server went away, keeping Xlib's structure (see xlock.c);
/// no Xlib call may use `dpy` afterwards.
void xclaw_display_drop_lost(Display *dpy);

/// XCreateIC is variadic and does not import into Swift: an input context for a client window.
XIC xclaw_create_ic(XIM im, Window window);

// --- OCR preparation (textlayout.c) ---

/// Converts a rectangle of a BGRX frame (stride_px pixels a row) to 8-bit luma into dst (w*h bytes).
void xclaw_bgrx_to_gray(const uint8_t *bgrx, int stride_px, int x, int y, int w, int h, uint8_t *dst);

/// A 64-bit content hash of a rectangle of a gray image, seeded with its size: the OCR cache key.
uint64_t xclaw_hash_gray(const uint8_t *gray, int stride, int x, int y, int w, int h);

/// Finds text-like blocks in a gray image: ink (neighbour differences above threshold) with long ruling lines removed,
/// split by recursive XY-cut. With clean != 0 the rules are also painted out of gray. Writes up to max rectangles as
/// x,y,w,h quadruples into out; returns how many exist (may exceed max), or -1 on bad input or allocation failure.
int xclaw_text_blocks(uint8_t *gray, int w, int h, int threshold, int clean, int *out, int max);

/// The most common gray level of a rectangle: its background, whatever the theme.
int xclaw_background_level(const uint8_t *gray, int stride, int x, int y, int w, int h);

/// Crops the rectangle x,y,w,h, keeping only the inner rectangle ix,iy,iw,ih (relative to it; the rest reads as
/// `background`), upscales by an integer factor (bilinear) and optionally inverts into dst ((w*scale) x (h*scale)
/// bytes): dark text on a light background at a size tesseract reads well.
void xclaw_prepare_block(const uint8_t *gray, int stride, int x, int y, int w, int h, int ix, int iy, int iw, int ih,
                         int background, int scale, int invert, uint8_t *dst);

// --- Control boxes (controls.c) ---

/// Finds the interiors of control-like boxes in a gray image (w x h, contiguous): regions of one fill (4-neighbours
/// within `tolerance` levels) that do not reach the image's edge, are min_w..max_w x min_h..max_h, are at least 45 %
/// fill and span at least 75 % of lines a quarter of the shorter side in from each edge of their bounding box. Writes
/// up to max records of 10 ints: x, y, w, h of the interior; x, y, w, h of the non-fill pixels inside it (all 0 when it
/// is empty); the mean fill level; the number of bands at least 4 rows tall the non-fill pixels form (lines of text;
/// thinner ones are strokes of "="). Returns how many exist (may exceed max), or -1 on bad input.
int xclaw_control_boxes(const uint8_t *gray, int w, int h, int tolerance, int min_w, int min_h, int max_w, int max_h,
                        int *out, int max);

/// Upscales a dark-on-light label image (w x h) by `scale` for tesseract: pixel replication, one 3x3 binomial blur,
/// and with thicken != 0 strokes widened by a pixel first (bitmap fonts' 1-px strokes). dst is (w*scale) x (h*scale).
void xclaw_upscale_label(const uint8_t *src, int w, int h, int scale, int thicken, uint8_t *dst);

// --- Template matching and colour search (match.c) ---

/// One position of a template in an image: its top-left corner and its score (-1..1).
typedef struct { int x, y; double score; } xclaw_match_hit;

/// How much work a search did: positions looked at, those the first bound could not rule out, exact scores computed.
typedef struct { long positions, stage2, exact; } xclaw_match_stats;

/// Errors of xclaw_match_template (negative returns).
enum {
    XCLAW_MATCH_BAD_SIZE = -1,  // an empty image or template, or a template over 1 Mpx or 4096 pixels a side
    XCLAW_MATCH_TOO_LARGE = -2, // the template is larger than the image
    XCLAW_MATCH_NO_MEMORY = -3,
    XCLAW_MATCH_FLAT = -4,      // the template is one colour: correlation is undefined for it
};

/// Finds every position where the normalised cross-correlation (OpenCV's TM_CCOEFF_NORMED) of the template with the
/// image is >= threshold (> 0): over the three colour channels jointly, or over grey levels with gray != 0. Both are
/// BGRX, rows packed. exhaustive != 0 scores every position (the reference the fast search is tested against); the
/// fast search scores exactly only the positions its bounds cannot rule out, so both find the same hits with the
/// same scores. Stores up to max_hits hits (in no particular order) and returns how many there are (may exceed
/// max_hits), or an XCLAW_MATCH_* error. best gets the best exactly scored position (score -2 if none was).
/// Uses two threads for large searches.
int xclaw_match_template(const uint8_t *image, int iw, int ih, const uint8_t *templ, int tw, int th, int gray,
                         double threshold, int exhaustive, xclaw_match_hit *hits, int max_hits,
                         xclaw_match_hit *best, xclaw_match_stats *stats);

/// Bilinear upscale of BGRX (pixel centres aligned), for templates searched at a larger scale. dw >= sw, dh >= sh.
/// Returns 0, or -1 on bad sizes.
int xclaw_upscale_bgrx(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh);

/// AutoHotkey's PixelSearch: the first pixel in reading order whose every channel is within tolerance of r, g, b.
/// Returns 1 and sets *x, *y, or 0 when none is.
int xclaw_find_color(const uint8_t *bgrx, int width, int height, int r, int g, int b, int tolerance, int *x, int *y);

#endif
