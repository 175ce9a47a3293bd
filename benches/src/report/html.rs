//! `index.html`: the report's Markdown turned into a standalone page, for a reader who opens
//! the report directory in a browser. Only the Markdown the report itself writes is handled:
//! headings, paragraphs, lists, tables, images, links, `code` and **bold**.

/// The page for `markdown` (as written by [`super::write_report`]).
pub fn from_markdown(markdown: &str) -> String {
    let mut body = String::new();
    let mut in_list = false;
    let mut in_table = false;
    let mut paragraph: Vec<String> = Vec::new();
    let flush_paragraph = |body: &mut String, paragraph: &mut Vec<String>| {
        if !paragraph.is_empty() {
            body.push_str(&format!("<p>{}</p>\n", inline(&paragraph.join(" "))));
            paragraph.clear();
        }
    };
    for line in markdown.lines() {
        let trimmed = line.trim();
        if in_list && !trimmed.starts_with("- ") && !trimmed.is_empty() && !line.starts_with("  ") {
            body.push_str("</ul>\n");
            in_list = false;
        }
        if in_table && !trimmed.starts_with('|') {
            body.push_str("</table>\n");
            in_table = false;
        }
        if trimmed.is_empty() {
            flush_paragraph(&mut body, &mut paragraph);
            continue;
        }
        if let Some(level) = heading_level(trimmed) {
            flush_paragraph(&mut body, &mut paragraph);
            let text = trimmed[level..].trim();
            body.push_str(&format!("<h{level}>{}</h{level}>\n", inline(text)));
        } else if let Some(item) = trimmed.strip_prefix("- ") {
            flush_paragraph(&mut body, &mut paragraph);
            if !in_list {
                body.push_str("<ul>\n");
                in_list = true;
            }
            body.push_str(&format!("<li>{}</li>\n", inline(item)));
        } else if trimmed.starts_with('|') {
            flush_paragraph(&mut body, &mut paragraph);
            let cells: Vec<&str> = trimmed
                .trim_matches('|')
                .split('|')
                .map(str::trim)
                .collect();
            if cells
                .iter()
                .all(|c| c.chars().all(|ch| ch == '-' || ch == ':'))
            {
                continue;
            }
            let tag = if in_table { "td" } else { "th" };
            if !in_table {
                body.push_str("<table>\n");
                in_table = true;
            }
            body.push_str("<tr>");
            for c in cells {
                body.push_str(&format!("<{tag}>{}</{tag}>", inline(c)));
            }
            body.push_str("</tr>\n");
        } else if let Some(rest) = trimmed.strip_prefix("![") {
            flush_paragraph(&mut body, &mut paragraph);
            if let Some((alt, src)) = rest.split_once("](") {
                let src = src.trim_end_matches(')');
                body.push_str(&format!(
                    "<figure><img src=\"{}\" alt=\"{}\"></figure>\n",
                    escape(src),
                    escape(alt)
                ));
            }
        } else {
            paragraph.push(trimmed.to_string());
        }
    }
    flush_paragraph(&mut body, &mut paragraph);
    if in_list {
        body.push_str("</ul>\n");
    }
    if in_table {
        body.push_str("</table>\n");
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Layering efficiency report</title>\n\
         <style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;line-height:1.4}}\
         table{{border-collapse:collapse;margin:1em 0;font-size:0.9em}}td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}}\
         th{{background:#f0f0f0}}img{{max-width:100%}}code{{background:#f4f4f4}}</style>\n</head>\n<body>\n{body}</body>\n</html>\n"
    )
}

fn heading_level(line: &str) -> Option<usize> {
    let n = line.chars().take_while(|&c| c == '#').count();
    (1..=6)
        .contains(&n)
        .then_some(n)
        .filter(|&n| line[n..].starts_with(' '))
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `code`, **bold** and [text](link) inside a line.
fn inline(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('`') {
            if let Some(end) = r.find('`') {
                out.push_str(&format!("<code>{}</code>", escape(&r[..end])));
                rest = &r[end + 1..];
                continue;
            }
        }
        if let Some(r) = rest.strip_prefix("**") {
            if let Some(end) = r.find("**") {
                out.push_str(&format!("<b>{}</b>", inline(&r[..end])));
                rest = &r[end + 2..];
                continue;
            }
        }
        if let Some(r) = rest.strip_prefix('[') {
            if let Some((label, after)) = r.split_once("](") {
                if let Some(end) = after.find(')') {
                    out.push_str(&format!(
                        "<a href=\"{}\">{}</a>",
                        escape(&after[..end]),
                        escape(label)
                    ));
                    rest = &after[end + 1..];
                    continue;
                }
            }
        }
        let ch = rest.chars().next().unwrap();
        out.push_str(&escape(&ch.to_string()));
        rest = &rest[ch.len_utf8()..];
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn tables_images_and_headings_become_html() {
        let md = "# Title\n\nSome `code` and **bold**.\n\n| a | b |\n|---|---:|\n| 1 | 2 |\n\n![chart](x.svg)\n\n- one\n- two\n";
        let html = super::from_markdown(md);
        assert!(html.contains("<h1>Title</h1>"));
        assert!(html.contains("<code>code</code>") && html.contains("<b>bold</b>"));
        assert!(html.contains("<th>a</th>") && html.contains("<td>2</td>"));
        assert!(html.contains("<img src=\"x.svg\""));
        assert!(html.contains("<li>two</li></ul>") || html.contains("<li>two</li>\n</ul>"));
    }
}
