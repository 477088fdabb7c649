//! Token cost of an image block.
//!
//! The rule is Anthropic's published one: an image is first scaled down so that its long edge is at
//! most 1,568 pixels and its area at most 1.15 megapixels, then costs `width * height / 750`
//! tokens. The size is read from the image header when the data is inline (PNG, GIF, JPEG); an
//! image given by URL, or in another format, costs the maximum, [`MAX_IMAGE_TOKENS`].

use crate::model::ImageSource;

/// The most an image can cost under the rule (1.15 MP / 750, rounded up).
pub const MAX_IMAGE_TOKENS: usize = 1_534;
const MAX_EDGE: f64 = 1_568.0;
const MAX_AREA: f64 = 1_150_000.0;

pub fn tokens(source: &ImageSource) -> usize {
    match source {
        ImageSource::Base64 { data, .. } => dimensions(data).map_or(MAX_IMAGE_TOKENS, |(w, h)| tokens_for_size(w, h)),
        ImageSource::Url(_) => MAX_IMAGE_TOKENS,
    }
}

/// The cost of an image a block holds in another form than [`crate::model::Body::Image`]: a
/// JSON object of type `image`, `input_image` or `computer_screenshot` (a Responses image given
/// by file id, a computer-use screenshot, an Anthropic image from the Files API), by its inline
/// data (`image_url` a `data:` URL, or an Anthropic base64 `source`) when it has some, else the
/// most an image costs; None for any other value.
pub fn of_object(value: &serde_json::Value) -> Option<usize> {
    let map = value.as_object()?;
    if !matches!(
        map.get("type")?.as_str()?,
        "image" | "input_image" | "computer_screenshot"
    ) {
        return None;
    }
    let inline = match (map.get("image_url"), map.get("source")) {
        (Some(serde_json::Value::String(url)), _) => url
            .strip_prefix("data:")
            .and_then(|r| r.split_once(";base64,"))
            .map(|(_, d)| d),
        (_, Some(serde_json::Value::Object(source)))
            if source.get("type").and_then(|t| t.as_str()) == Some("base64") =>
        {
            source.get("data").and_then(|d| d.as_str())
        }
        _ => None,
    };
    Some(
        inline
            .and_then(dimensions)
            .map_or(MAX_IMAGE_TOKENS, |(w, h)| tokens_for_size(w, h)),
    )
}

/// Tokens for an image of `width` x `height` pixels.
pub fn tokens_for_size(width: u32, height: u32) -> usize {
    if width == 0 || height == 0 {
        return 0;
    }
    let (mut w, mut h) = (f64::from(width), f64::from(height));
    let edge_scale = (MAX_EDGE / w.max(h)).min(1.0);
    w *= edge_scale;
    h *= edge_scale;
    let area_scale = (MAX_AREA / (w * h)).sqrt().min(1.0);
    w = (w * area_scale).floor();
    h = (h * area_scale).floor();
    ((w * h) / 750.0).ceil() as usize
}

/// Width and height from the header of base64-encoded PNG, GIF or JPEG data.
pub fn dimensions(base64: &str) -> Option<(u32, u32)> {
    // A JPEG's size marker can sit after metadata; 64 KiB of header is plenty in practice.
    let head = decode_prefix(base64, 64 * 1024);
    if head.starts_with(b"\x89PNG\r\n\x1a\n") && head.len() >= 24 {
        let w = u32::from_be_bytes(head[16..20].try_into().ok()?);
        let h = u32::from_be_bytes(head[20..24].try_into().ok()?);
        return Some((w, h));
    }
    if (head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a")) && head.len() >= 10 {
        let w = u32::from(u16::from_le_bytes([head[6], head[7]]));
        let h = u32::from(u16::from_le_bytes([head[8], head[9]]));
        return Some((w, h));
    }
    if head.starts_with(&[0xFF, 0xD8]) {
        return jpeg_dimensions(&head);
    }
    None
}

fn jpeg_dimensions(data: &[u8]) -> Option<(u32, u32)> {
    let mut i = 2;
    while i + 9 < data.len() {
        if data[i] != 0xFF {
            i += 1;
            continue;
        }
        let marker = data[i + 1];
        // Start-of-frame markers carry the size; 0xC4, 0xC8 and 0xCC are not frames.
        if (0xC0..=0xCF).contains(&marker) && !matches!(marker, 0xC4 | 0xC8 | 0xCC) {
            let h = u32::from(u16::from_be_bytes([data[i + 5], data[i + 6]]));
            let w = u32::from(u16::from_be_bytes([data[i + 7], data[i + 8]]));
            return Some((w, h));
        }
        if marker == 0xD8 || marker == 0x01 || (0xD0..=0xD7).contains(&marker) {
            i += 2;
            continue;
        }
        let len = usize::from(u16::from_be_bytes([data[i + 2], data[i + 3]]));
        i += 2 + len;
    }
    None
}

/// Decode up to `limit` bytes from the start of standard base64 text (stops at the first
/// character outside the alphabet).
fn decode_prefix(text: &str, limit: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(limit.min(text.len()));
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'\n' | b'\r' => continue,
            _ => break,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
            if out.len() >= limit {
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(bytes: &[u8]) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |acc, (i, &b)| acc | (u32::from(b) << (16 - 8 * i)));
            for i in 0..=chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            }
        }
        out
    }

    #[test]
    fn reads_png_and_gif_sizes() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend_from_slice(&800u32.to_be_bytes());
        png.extend_from_slice(&600u32.to_be_bytes());
        png.extend_from_slice(&[8, 6, 0, 0, 0]);
        assert_eq!(dimensions(&b64(&png)), Some((800, 600)));
        let gif = [b"GIF89a".as_slice(), &[0x20, 0x03, 0x58, 0x02], &[0; 6]].concat();
        assert_eq!(dimensions(&b64(&gif)), Some((800, 600)));
        assert_eq!(dimensions("not an image"), None);
    }

    #[test]
    fn reads_jpeg_size_after_metadata() {
        let mut jpeg = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10];
        jpeg.extend_from_slice(&[0; 14]);
        jpeg.extend_from_slice(&[0xFF, 0xC0, 0x00, 0x11, 0x08, 0x02, 0x58, 0x03, 0x20, 0x03]);
        jpeg.extend_from_slice(&[0; 12]);
        assert_eq!(dimensions(&b64(&jpeg)), Some((800, 600)));
    }

    #[test]
    fn follows_the_published_rule() {
        assert_eq!(tokens_for_size(200, 200), 54);
        assert_eq!(tokens_for_size(1000, 1000), 1334);
        // Large images are scaled to the area cap.
        assert!(tokens_for_size(4000, 3000) <= MAX_IMAGE_TOKENS);
        assert!(tokens_for_size(4000, 3000) > 1_500);
        assert_eq!(tokens(&ImageSource::Url("https://x/y.png".into())), MAX_IMAGE_TOKENS);
    }
}
