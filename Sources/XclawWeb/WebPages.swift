import Foundation
import HTTPTypes
import Hummingbird

/// The pages: one document and its scripts and style, compiled into the binary (`PackageResources`), so the web
/// view works offline and needs no CDN. The screens (dashboard, chat, pipeline, screen control, agent, runs) are
/// routes of the script.
enum WebPages {
    /// The policy every page is served under: nothing but this server's own script, style, images and sockets.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; connect-src 'self'; "
        + "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

    private static let assets: [String: (bytes: [UInt8], type: String)] = [
        "index.html": (PackageResources.index_html, "text/html; charset=utf-8"),
        "app.js": (PackageResources.app_js, "text/javascript; charset=utf-8"),
        "markdown.js": (PackageResources.markdown_js, "text/javascript; charset=utf-8"),
        "app.css": (PackageResources.app_css, "text/css; charset=utf-8"),
    ]

    /// The paths anyone may GET: the page, its script and its style hold no secret, and the page's address cannot
    /// carry a credential to the server (its token is in the fragment, which a browser never sends).
    static func isPublic(_ path: String) -> Bool { pages[path] != nil }

    /// Each public path and the asset it serves.
    private static let pages = [
        "/": "index.html", "/app.js": "app.js", "/markdown.js": "markdown.js", "/app.css": "app.css",
    ]

    static func add<Context: RequestContext>(to router: Router<Context>, assetsDirectory: String?) {
        for (path, file) in pages {
            router.get(RouterPath(path)) { _, _ in
                serve(file, from: assetsDirectory)
            }
        }
    }

    private static func serve(_ name: String, from directory: String?) -> Response {
        guard let asset = assets[name] else { return Response(status: .notFound) }
        var bytes = asset.bytes
        if let directory, let data = FileManager.default.contents(atPath: directory + "/" + name) {
            bytes = [UInt8](data)
        }
        return WebResponses.raw(
            Data(bytes), type: asset.type,
            headers: [
                .contentSecurityPolicy: contentSecurityPolicy, HTTPField.Name("X-Content-Type-Options")!: "nosniff",
                HTTPField.Name("Referrer-Policy")!: "no-referrer",
            ])
    }
}
