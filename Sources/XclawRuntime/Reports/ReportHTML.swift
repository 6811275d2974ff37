import Foundation
import XclawBase
import XclawMessages
import XclawStore

/// Renders a `RunReport` as one self-contained HTML page: inline CSS, screenshots as data URIs, overlays as inline
/// SVG, and a Content-Security-Policy that forbids every script and every load but `data:` images, so nothing the
/// model or the screen wrote can run or reach the network. Every piece of text is escaped.
public enum ReportHTML {
    /// The page's policy: nothing but inline styles and `data:` images.
    public static let contentSecurityPolicy = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

    /// The whole page; `generated` is when it was written (shown in the footer).
    public static func page(_ report: RunReport, generated: Date = Date()) -> String {
        let s = report.session
        var out = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <meta http-equiv="Content-Security-Policy" content="\(contentSecurityPolicy)">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="referrer" content="no-referrer">
            <title>xclaw run \(s.id): \(escape(report.title))</title>
            <style>\(style)</style></head><body>

            """
        out += "<header><h1>Run \(s.id): \(escape(report.title))</h1><dl>"
        func row(_ name: String, _ value: String, raw: Bool = false) {
            out += "<dt>\(name)</dt><dd>\(raw ? value : escape(value))</dd>"
        }
        row("Task", report.task.map { "scheduled task \($0)" } ?? "asked by a person")
        row("Prompt", "<div class=\"text\">\(escape(cut(report.prompt, 4000)))</div>", raw: true)
        row("Agent", s.agent)
        row("Model", report.model ?? "unknown")
        let outcome = "<span class=\"status \(escape(s.status.rawValue))\">\(escape(s.status.rawValue))</span>"
        row("Outcome", outcome + (s.error.map { " — " + escape($0) } ?? ""), raw: true)
        row("Started", StoreDate.format(s.startedAt))
        row("Duration", report.durationMs.map(milliseconds) ?? "still running")
        row("Steps", "\(report.steps.count)")
        let u = report.usage
        row(
            "Tokens",
            "\(u.inputTokens) input, \(u.outputTokens) output, \(u.cacheReadInputTokens) cache read, "
                + "\(u.cacheCreationInputTokens) cache write")
        row("Cost", String(format: "$%.4f", report.usd))
        if let replay = s.replay {
            row(
                "Replay",
                "\(replay.script) (revision \(replay.revision ?? 1)): \(replay.steps) steps, \(replay.replayed) replayed "
                    + "without the model, \(replay.healed) healed, \(replay.failed) failed; \(replay.requests) model "
                    + "request(s)")
        }
        out += "</dl></header>\n"
        if s.replay != nil { out += replaySection(report) }
        for step in report.steps { out += section(step) }
        if report.steps.isEmpty && s.replay == nil {
            out += "<p class=\"empty\">This run stored no model reply.</p>\n"
        }
        out +=
            "<footer>Written by xclaw on \(StoreDate.format(generated)). Screen text and the model's words are shown "
            + "as data; nothing on this page runs.</footer>\n</body></html>\n"
        return out
    }

    /// A replay's steps: how each was found (label, image, its place in its window) and what came of it, then the
    /// screen where it diverged.
    private static func replaySection(_ report: RunReport) -> String {
        var out =
            "<section class=\"step\" id=\"replay\"><h2>Replayed steps</h2>\n<table class=\"replay\"><tr><th>#</th>"
            + "<th>action</th><th>control</th><th>found by</th><th>at</th><th>result</th><th>time</th></tr>\n"
        for step in report.replaySteps {
            let result =
                step.result + (step.healedLabel.map { " (now “\($0)”)" } ?? "")
                + (step.reason.map { ": \($0)" } ?? "")
            out +=
                "<tr class=\"\(escape(step.result))\"><td>\(step.number)</td><td>\(escape(step.action.rawValue))</td>"
                + "<td>\(escape(step.label ?? ""))</td><td>\(escape(step.grounded ?? "-"))</td>"
                + "<td>\(step.point.map { $0.map(String.init).joined(separator: ",") } ?? "-")</td>"
                + "<td>\(escape(cut(result, 2000)))</td><td>\(milliseconds(Int(step.ms.rounded())))</td></tr>\n"
        }
        out += "</table>\n"
        if report.replaySteps.isEmpty { out += "<p class=\"empty\">No step was replayed.</p>\n" }
        if let image = report.replayShot {
            out +=
                "<p>The screen when it diverged:</p><div class=\"shot\" style=\"max-width:\(image.width)px\">"
                + "<div class=\"frame\"><img src=\"data:\(image.mediaType);base64,\(image.base64)\" "
                + "width=\"\(image.width)\" height=\"\(image.height)\" alt=\"the screen when the replay diverged\">"
                + "</div></div>\n"
        }
        return out + "</section>\n"
    }

    /// One step: its figures, the screenshot with the overlay, the model's text, the calls and their results.
    private static func section(_ step: RunReport.Step) -> String {
        var out = "<section class=\"step\" id=\"step-\(step.number)\"><h2>Step \(step.number)"
        var facts: [String] = []
        if let r = step.record {
            if let ms = r.modelMs { facts.append("model \(milliseconds(Int(ms.rounded())))") }
            if let ms = r.toolMs, !step.actions.isEmpty { facts.append("tools \(milliseconds(Int(ms.rounded())))") }
            facts.append("\(r.usage.inputTokens) in / \(r.usage.outputTokens) out")
            if r.usage.cacheReadInputTokens + r.usage.cacheCreationInputTokens > 0 {
                facts.append(
                    "cache \(r.usage.cacheReadInputTokens) read / \(r.usage.cacheCreationInputTokens) write")
            }
            facts.append(String(format: "$%.4f", r.usd))
            if let stop = r.stopReason { facts.append(stop) }
        }
        if step.status != .complete { facts.append("reply \(step.status.rawValue)") }
        if !facts.isEmpty { out += " <small>\(escape(facts.joined(separator: " · ")))</small>" }
        out += "</h2>\n"
        for (k, panel) in step.panels.enumerated() {
            let image = panel.image
            let numbered = panel.actions.map { (step.actions[$0].number, step.actions[$0].overlay) }
            // The calls that acted on it (a look drawn beside them did not).
            let calls = panel.actions.filter { step.actions[$0].frame == .image(image) }.map {
                "\(step.actions[$0].number)"
            }
            let what =
                panel.actedOn
                ? "the screen call\(calls.count == 1 ? "" : "s") \(calls.joined(separator: ", ")) acted on"
                : "the screenshot the model saw before step \(step.number)"
            out +=
                "<figure class=\"shot\" id=\"shot-\(step.number)\(k == 0 ? "" : "-\(k + 1)")\" "
                + "style=\"max-width:\(image.width)px\"><div class=\"frame\">"
                + "<img src=\"data:\(image.mediaType);base64,\(image.base64)\" width=\"\(image.width)\" "
                + "height=\"\(image.height)\" alt=\"\(what)\">"
                + ReportOverlay.svg(numbered, width: image.width, height: image.height)
                + "</div><figcaption>\(what.prefix(1).uppercased() + what.dropFirst())</figcaption></figure>\n"
        }
        if step.panels.isEmpty {
            out += "<p class=\"noshot\">No screen for this step: \(escape(step.noFrame ?? "none was kept")).</p>\n"
        }
        if !step.text.isEmpty { out += "<div class=\"text model\">\(escape(step.text))</div>\n" }
        if !step.actions.isEmpty {
            out += "<ol class=\"actions\">"
            for a in step.actions {
                out +=
                    "<li value=\"\(a.number)\"><b>\(escape(a.tool))</b> <span class=\"caption\">"
                    + "\(escape(a.overlay.caption))</span><code>\(escape(cut(a.input.jsonText, 2000)))</code>"
                if let result = a.result {
                    let images = a.images > 0 ? " (+\(a.images) screenshot\(a.images == 1 ? "" : "s"))" : ""
                    out +=
                        "<div class=\"result\(a.isError ? " error" : "")\">"
                        + escape(cut(result, 20000) + images) + "</div>"
                } else {
                    out += "<div class=\"result error\">no result was stored (the run ended first)</div>"
                }
                out += "</li>"
            }
            out += "</ol>\n"
        }
        return out + "</section>\n"
    }

    /// `1.2 s` or `340 ms`.
    private static func milliseconds(_ ms: Int) -> String {
        ms >= 1000 ? String(format: "%.1f s", Double(ms) / 1000) : "\(ms) ms"
    }

    /// At most `limit` characters, with a note when cut.
    private static func cut(_ text: String, _ limit: Int) -> String {
        text.count > limit ? String(text.prefix(limit)) + "… (\(text.count - limit) more characters)" : text
    }

    /// Text as HTML (and SVG) text or attribute value: `& < > " '` as entities, control characters and
    /// bidirectional overrides in their visible `\x1b` form (newlines and tabs kept: the page shows them as they are).
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            case "\n", "\t": out.unicodeScalars.append(scalar)
            default:
                if UntrustedText.isControl(scalar) || (0xfff9...0xfffb).contains(scalar.value)
                    || scalar.value == 0xfeff
                {
                    out += UntrustedText.visible(scalar)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    /// The page's CSS: readable on screen and in print, images never wider than the page, the overlay exactly over
    /// its image.
    private static let style = """
        body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;padding:16px;max-width:1500px;color:#1b1b1b;\
        background:#fff}\
        table.replay{border-collapse:collapse}.replay td,.replay th{border:1px solid #ccc;padding:2px 6px;\
        text-align:left}tr.failed{background:#fde2e2}tr.healed{background:#fff6d6}\
        h1{font-size:20px;margin:0 0 8px}h2{font-size:16px;margin:24px 0 8px;border-top:1px solid #ccc;\
        padding-top:12px}h2 small{font-weight:normal;color:#555}\
        dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:0}dt{font-weight:bold}dd{margin:0}\
        .status{font-weight:bold}.status.completed{color:#17692a}.status.failed,.status.interrupted,\
        .status.stopped{color:#b00020}\
        .shot{margin:0 0 8px}.frame{position:relative}.frame img{display:block;width:100%;height:auto;border:0}\
        .frame svg{position:absolute;left:0;top:0;width:100%;height:100%}\
        .shot figcaption{color:#555;font-size:12px;margin-top:2px}\
        .text{white-space:pre-wrap;overflow-wrap:anywhere}.model{margin:8px 0;padding:8px;background:#f3f3f7;\
        border-left:3px solid #66a}\
        .actions{padding-left:24px}.actions li{margin:6px 0}.caption{margin:0 6px}\
        code{display:block;font:12px/1.4 ui-monospace,monospace;white-space:pre-wrap;overflow-wrap:anywhere;\
        color:#444}\
        .result{white-space:pre-wrap;overflow-wrap:anywhere;font:12px/1.4 ui-monospace,monospace;background:#f6f6f6;\
        padding:4px 6px;margin-top:2px}.result.error{background:#fdecee;color:#8a0018}\
        .noshot,.empty{color:#666;font-style:italic}footer{margin-top:32px;color:#666;font-size:12px}
        """
}
