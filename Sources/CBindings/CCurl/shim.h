// libcurl, used by the Claude client.
#include <curl/curl.h>
