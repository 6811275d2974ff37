// tesseract C API (OCR), used by the perception layer.
#include <tesseract/capi.h>
