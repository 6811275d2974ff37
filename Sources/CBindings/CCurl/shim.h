// libcurl, used by the Claude client and the web tools (fetch_url, web_search).
// curl_easy_setopt / curl_easy_getinfo / curl_multi_setopt are variadic and do not import into Swift: these typed
// wrappers are the only way the Swift side sets options. Each one exists for one argument type.
#ifndef XCLAW_CCURL_SHIM_H
#define XCLAW_CCURL_SHIM_H

#include <curl/curl.h>

/// curl_global_init with the default flags (the flag macros are expressions Swift does not import).
static inline CURLcode xclaw_curl_global_init(void) { return curl_global_init(CURL_GLOBAL_DEFAULT); }

/// Options taking a `long` (timeouts, booleans, sizes that fit in a long).
static inline CURLcode xclaw_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

/// Options taking a `curl_off_t` (CURLOPT_POSTFIELDSIZE_LARGE).
static inline CURLcode xclaw_curl_setopt_offset(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

/// Options taking a C string (libcurl copies strings, except CURLOPT_POSTFIELDS).
static inline CURLcode xclaw_curl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

/// Options taking an opaque pointer (CURLOPT_WRITEDATA, CURLOPT_HEADERDATA, CURLOPT_POSTFIELDS, CURLOPT_ERRORBUFFER).
static inline CURLcode xclaw_curl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

/// Options taking a header list (CURLOPT_HTTPHEADER).
static inline CURLcode xclaw_curl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

/// CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION (both have the curl_write_callback shape).
static inline CURLcode xclaw_curl_setopt_write_function(CURL *handle, CURLoption option, curl_write_callback fn) {
    return curl_easy_setopt(handle, option, fn);
}

/// CURLOPT_OPENSOCKETFUNCTION: every socket a transfer opens goes through it, with the exact address it will connect
/// to, so the web fetcher can refuse private addresses after DNS and on every redirect.
static inline CURLcode xclaw_curl_setopt_opensocket_function(CURL *handle, curl_opensocket_callback fn) {
    return curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, fn);
}

/// Informations returned as a `long` (CURLINFO_RESPONSE_CODE).
static inline CURLcode xclaw_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

/// Informations returned as a `curl_off_t` (CURLINFO_SIZE_UPLOAD_T).
static inline CURLcode xclaw_curl_getinfo_offset(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

/// Informations returned as a C string owned by the handle (CURLINFO_EFFECTIVE_URL); NULL when there is none.
static inline CURLcode xclaw_curl_getinfo_string(CURL *handle, CURLINFO info, const char **value) {
    char *text = NULL;
    CURLcode code = curl_easy_getinfo(handle, info, &text);
    *value = text;
    return code;
}

/// The `result` of a CURLMSG_DONE message (a union member, awkward to reach from Swift).
static inline CURLcode xclaw_curl_msg_result(const CURLMsg *msg) { return msg->data.result; }

#endif
