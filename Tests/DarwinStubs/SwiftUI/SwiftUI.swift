@_exported import Foundation
@_exported import Observation

// SwiftUI as far as the README's and the examples' views use it, so they type-check on
// Linux (scripts/readme-swift). Compiled as a module named SwiftUI. Each declaration is
// Apple's (developer.apple.com/documentation/swiftui), with the generic parameters the
// views here do not use left out, as each comment says; the bodies are never run.

/// `@MainActor @preconcurrency protocol View` with `associatedtype Body: View` and
/// `@ViewBuilder @MainActor @preconcurrency var body: Self.Body { get }`.
@MainActor @preconcurrency public protocol View {
    associatedtype Body: View
    @ViewBuilder @MainActor @preconcurrency var body: Self.Body { get }
}

extension Never: View {
    public var body: Never { fatalError("stub") }
}

/// `Optional: View where Wrapped: View` (what `buildIf` returns).
extension Optional: View where Wrapped: View {
    public var body: Never { fatalError("stub") }
}

/// `struct EmptyView`.
public struct EmptyView: View {
    public init() {}
    public var body: Never { fatalError("stub") }
}

/// `struct TupleView<T>`.
public struct TupleView<T>: View {
    public init(_ value: T) {}
    public var body: Never { fatalError("stub") }
}

/// `struct _ConditionalContent<TrueContent, FalseContent>` (what `buildEither` returns).
public struct _ConditionalContent<TrueContent: View, FalseContent: View>: View {
    public var body: Never { fatalError("stub") }
}

/// `@resultBuilder struct ViewBuilder`: `buildBlock()`, `buildBlock(_:)`, the variadic
/// `buildBlock<each Content>(_ content: repeat each Content) -> TupleView<(repeat each Content)>`,
/// `buildIf(_:)` and `buildEither(first:)` / `buildEither(second:)`.
@resultBuilder public struct ViewBuilder {
    public static func buildBlock() -> EmptyView { fatalError("stub") }
    public static func buildBlock<Content: View>(_ content: Content) -> Content { fatalError("stub") }
    public static func buildBlock<each Content: View>(_ content: repeat each Content) -> TupleView<(repeat each Content)> { fatalError("stub") }
    public static func buildIf<Content: View>(_ content: Content?) -> Content? { fatalError("stub") }
    public static func buildEither<TrueContent: View, FalseContent: View>(first: TrueContent) -> _ConditionalContent<TrueContent, FalseContent> { fatalError("stub") }
    public static func buildEither<TrueContent: View, FalseContent: View>(second: FalseContent) -> _ConditionalContent<TrueContent, FalseContent> { fatalError("stub") }
}

/// `struct Text`: `init<S>(_ content: S) where S: StringProtocol`.
public struct Text: View {
    public init<S: StringProtocol>(_ content: S) {}
    public var body: Never { fatalError("stub") }
}

/// `struct HStack<Content>`: `init(alignment:spacing:content:)`, here without `alignment`
/// and `spacing` (both defaulted in Apple's declaration).
public struct HStack<Content: View>: View {
    public init(@ViewBuilder content: () -> Content) {}
    public var body: Never { fatalError("stub") }
}

/// `struct VStack<Content>`: `init(alignment:spacing:content:)`, as HStack.
public struct VStack<Content: View>: View {
    public init(@ViewBuilder content: () -> Content) {}
    public var body: Never { fatalError("stub") }
}

/// `struct ProgressView<Label, CurrentValueLabel>`:
/// `init<V>(value: V?, total: V = 1.0) where Label == EmptyView, CurrentValueLabel == EmptyView, V: BinaryFloatingPoint`.
public struct ProgressView<Label: View, CurrentValueLabel: View>: View {
    public init<V: BinaryFloatingPoint>(value: V?, total: V = 1.0) where Label == EmptyView, CurrentValueLabel == EmptyView {}
    public var body: Never { fatalError("stub") }
}

/// `struct Button<Label>`: `init<S>(_ title: S, action: @escaping @MainActor () -> Void) where Label == Text, S: StringProtocol`.
public struct Button<Label: View>: View {
    public init<S: StringProtocol>(_ title: S, action: @escaping @MainActor () -> Void) where Label == Text {}
    public var body: Never { fatalError("stub") }
}

/// `protocol ShapeStyle`, and `struct Color: ShapeStyle` with `static let red: Color`.
public protocol ShapeStyle: Sendable {}
public struct Color: ShapeStyle, View {
    public static let red = Color()
    public var body: Never { fatalError("stub") }
}
extension ShapeStyle where Self == Color {
    /// `static var red: Color { get }`.
    public static var red: Color { Color() }
}

/// A view the modifiers below return (Apple's are `some View`).
public struct ModifiedView: View {
    public var body: Never { fatalError("stub") }
}

extension View {
    /// `nonisolated func task(name: String? = nil, priority: TaskPriority = .userInitiated,
    /// file: String = #fileID, line: Int = #line, _ action: sending @escaping @isolated(any) () async -> Void) -> some View`.
    /// The action runs on the view's actor (the main actor in `body`): SwiftUI's interface
    /// says so with `@_inheritActorContext`, which documentation pages do not print.
    nonisolated public func task(name: String? = nil, priority: TaskPriority = .userInitiated, file: String = #fileID, line: Int = #line,
                                 @_inheritActorContext _ action: sending @escaping @isolated(any) () async -> Void) -> some View { ModifiedView() }

    /// `func foregroundStyle<S>(_ style: S) -> some View where S: ShapeStyle`.
    public func foregroundStyle<S: ShapeStyle>(_ style: S) -> some View { ModifiedView() }
}

/// `@propertyWrapper struct State<Value>: DynamicProperty`: `init(wrappedValue:)`,
/// `var wrappedValue: Value { get nonmutating set }`.
@propertyWrapper public struct State<Value> {
    public init(wrappedValue value: Value) {}
    public var wrappedValue: Value {
        get { fatalError("stub") }
        nonmutating set {}
    }
}
