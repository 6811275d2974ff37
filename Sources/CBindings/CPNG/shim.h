// libpng (the simplified read API is used from Swift; the classic write API lives in CXclawShim).
#include <png.h>
