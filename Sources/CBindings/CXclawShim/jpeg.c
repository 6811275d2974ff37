#include "xclaw_shim.h"
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>

typedef struct {
    struct jpeg_error_mgr base;
    jmp_buf jump;
    char *err;
    size_t err_len;
} jpeg_failure_t;

static void jpeg_fail(j_common_ptr info) {
    jpeg_failure_t *f = (jpeg_failure_t *)info->err;
    if (f->err && f->err_len) (*info->err->format_message)(info, f->err);
    longjmp(f->jump, 1);
}

int xclaw_jpeg_encode_bgrx(const uint8_t *bgrx, int width, int height, int quality, uint8_t **out, size_t *out_len,
                           char *err, size_t err_len) {
    if (!bgrx || width <= 0 || height <= 0 || quality < 1 || quality > 100 || !out || !out_len) {
        if (err && err_len) snprintf(err, err_len, "bad arguments");
        return -1;
    }
    struct jpeg_compress_struct info;
    jpeg_failure_t failure;
    char message[JMSG_LENGTH_MAX] = {0};
    failure.err = message;
    failure.err_len = sizeof message;
    unsigned char *buffer = NULL;
    unsigned long size = 0;
    info.err = jpeg_std_error(&failure.base);
    failure.base.error_exit = jpeg_fail;
    if (setjmp(failure.jump)) {
        jpeg_destroy_compress(&info);
        free(buffer);
        if (err && err_len) snprintf(err, err_len, "%s", message[0] ? message : "libjpeg failed");
        return -1;
    }
    jpeg_create_compress(&info);
    jpeg_mem_dest(&info, &buffer, &size);
    info.image_width = (JDIMENSION)width;
    info.image_height = (JDIMENSION)height;
    info.input_components = 4;
    info.in_color_space = JCS_EXT_BGRX;  // libjpeg-turbo reads X's pixel layout as it is
    jpeg_set_defaults(&info);
    jpeg_set_quality(&info, quality, TRUE);
    jpeg_start_compress(&info, TRUE);
    while (info.next_scanline < info.image_height) {
        JSAMPROW row = (JSAMPROW)(bgrx + (size_t)info.next_scanline * (size_t)width * 4);
        jpeg_write_scanlines(&info, &row, 1);
    }
    jpeg_finish_compress(&info);
    jpeg_destroy_compress(&info);
    *out = buffer;
    *out_len = (size_t)size;
    return 0;
}
