#include "xclaw_shim.h"
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { uint8_t *data; size_t len, cap; int oom; char *err; size_t err_len; } sink_t;

static void sink_write(png_structp png, png_bytep bytes, png_size_t n) {
    sink_t *s = png_get_io_ptr(png);
    if (s->len + n > s->cap) {
        size_t cap = s->cap * 2 > s->len + n ? s->cap * 2 : s->len + n;
        uint8_t *d = realloc(s->data, cap);
        if (!d) { s->oom = 1; png_error(png, "out of memory"); }
        s->data = d; s->cap = cap;
    }
    memcpy(s->data + s->len, bytes, n);
    s->len += n;
}

static void sink_flush(png_structp png) { (void)png; }

static void on_error(png_structp png, png_const_charp msg) {
    sink_t *s = png_get_error_ptr(png);
    if (s && s->err && s->err_len) snprintf(s->err, s->err_len, "%s", msg);
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg) { (void)png; (void)msg; }

int xclaw_png_encode_bgrx(const uint8_t *bgrx, int width, int height, int level, int strategy, int filters,
                          uint8_t **out, size_t *out_len, char *err, size_t err_len) {
    if (width <= 0 || height <= 0) { snprintf(err, err_len, "empty image"); return -1; }
    sink_t sink = { 0 };
    sink.err = err; sink.err_len = err_len;
    // UI screenshots compress to well under a quarter of the raw RGB size: start there, grow if needed.
    sink.cap = (size_t)width * height * 3 / 4 + 65536;
    sink.data = malloc(sink.cap);
    if (!sink.data) { snprintf(err, err_len, "out of memory"); return -1; }
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &sink, on_error, on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_write_struct(&png, NULL);
        free(sink.data);
        snprintf(err, err_len, "libpng could not be initialised");
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(sink.data);
        return -1;
    }
    png_set_write_fn(png, &sink, sink_write, sink_flush);
    png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, level);
    png_set_compression_strategy(png, strategy);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, filters);
    png_set_compression_buffer_size(png, 1 << 18);
    png_write_info(png, info);
    // The rows stay BGRX: libpng swaps to RGB and drops the X byte while it writes, so no packing pass.
    png_set_bgr(png);
    png_set_filler(png, 0, PNG_FILLER_AFTER);
    size_t stride = (size_t)width * 4;
    for (int y = 0; y < height; y++) png_write_row(png, (png_const_bytep)(bgrx + (size_t)y * stride));
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    *out = sink.data;
    *out_len = sink.len;
    return 0;
}
